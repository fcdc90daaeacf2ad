"""Recorded ``nvidia-smi`` outputs (tests/data/nvidia_smi/) as the two seams of :mod:`ocrstack.gpu`.

- :func:`recorded_scan`: the :class:`ocrstack.gpu.GpuScan` a machine gives, read in-process
  (for code that takes the scan as a parameter, e.g. ``serving.plan.plan(opts, gpus=...)``);
- :func:`write_fake`: an executable ``nvidia-smi`` that prints the recorded output, to put first
  on PATH for code that asks nvidia-smi itself (tests that use it start a process: mark them ``proc``).
"""

from __future__ import annotations

from pathlib import Path

from ocrstack import gpu

DATA = Path(__file__).resolve().parents[1] / "data" / "nvidia_smi"


def recorded(name: str) -> tuple[int, str]:
    """``(exit status, output)`` of ``nvidia-smi --query-gpu`` on machine ``name`` (README.md there).

    ``no_driver`` is the driver-not-loaded message with nvidia-smi's exit status 9.
    """
    gpus = DATA / f"{name}.gpus.csv"
    if gpus.is_file():
        return 0, gpus.read_text()
    return 9, (DATA / f"{name}.txt").read_text()


def recorded_scan(name: str | None) -> gpu.GpuScan:
    """What :func:`ocrstack.gpu.scan` returns on machine ``name``; None: a host without nvidia-smi."""
    return gpu.scan(lambda argv: recorded(name), lambda exe: f"/usr/bin/{exe}" if name else None)


def write_fake(bin_dir: Path, name: str) -> Path:
    """Write ``bin_dir/nvidia-smi`` answering like machine ``name``; returns its path.

    It prints the recorded ``--query-gpu`` / ``--query-compute-apps`` output for those queries
    (``no_driver``: the driver message and exit status 9 for any query), exit status 2 otherwise.
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "nvidia-smi"
    if (DATA / f"{name}.gpus.csv").is_file():
        body = (
            f'case "$1" in\n  --query-gpu=*) cat "{DATA / (name + ".gpus.csv")}";;\n'
            f'  --query-compute-apps=*) cat "{DATA / (name + ".apps.csv")}";;\n  *) exit 2;;\nesac\n'
        )
    else:
        body = f'cat "{DATA / (name + ".txt")}"\nexit 9\n'
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script
