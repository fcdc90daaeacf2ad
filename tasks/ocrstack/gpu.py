"""GPU facts from ``nvidia-smi``: the query, its parsing, and the freest-GPU pick.

Shared below the verbs: ``ocrstack preflight`` judges the GPUs (:func:`scan`, :func:`parse_apps`)
and ``ocrstack serve`` starts a server on the freest one (:func:`scan`, :func:`freest`).

``nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,driver_version --format=csv``
prints a header with units and one row per GPU::

    index, uuid, name, memory.total [MiB], memory.used [MiB], driver_version
    0, GPU-6f1c..., NVIDIA GeForce RTX 5090, 32607 MiB, 27845 MiB, 590.48.01

``--query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv`` prints the
same kind of table (header only when no process runs). Values may be ``[N/A]``
(e.g. unified-memory GPUs); those become None.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ocrstack.core import proc

GPU_FIELDS = ("index", "uuid", "name", "memory.total", "memory.used", "driver_version")
APP_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")
GPU_QUERY = ["nvidia-smi", f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv"]
APPS_QUERY = ["nvidia-smi", f"--query-compute-apps={','.join(APP_FIELDS)}", "--format=csv"]
MIB = 1024 * 1024
#: Seconds nvidia-smi gets to answer :data:`GPU_QUERY` (it hangs when the driver is wedged).
QUERY_TIMEOUT = 30.0

#: ``(argv) -> (exit status, output)``: how :func:`scan` runs nvidia-smi.
Runner = Callable[[Sequence[str]], tuple[int, str]]


@dataclass(frozen=True)
class Gpu:
    """One GPU: ``total_mib``/``used_mib`` in MiB (None when nvidia-smi says [N/A])."""

    index: int
    uuid: str
    name: str
    total_mib: int | None
    used_mib: int | None
    driver: str

    @property
    def total_gb(self) -> float | None:
        """Total memory in GB (10^9 bytes), the unit of guide 2's "24 GB"."""
        return None if self.total_mib is None else self.total_mib * MIB / 1e9

    @property
    def free_fraction(self) -> float | None:
        """Share of memory not in use (0..1), None when unknown."""
        if not self.total_mib or self.used_mib is None:
            return None
        return max(0.0, 1.0 - self.used_mib / self.total_mib)


@dataclass(frozen=True)
class GpuApp:
    """One compute process on a GPU (``used_mib`` in MiB)."""

    gpu_uuid: str
    pid: int
    name: str
    used_mib: int | None


def _rows(text: str) -> list[dict[str, str]]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    reader = csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True)
    header = [re.sub(r"\s*\[.*?\]\s*$", "", h.strip()) for h in next(reader)]
    return [dict(zip(header, (c.strip() for c in row), strict=False)) for row in reader if row]


def _mib(value: str | None) -> int | None:
    if value is None:
        return None
    m = re.fullmatch(r"(\d+)(?:\s*MiB)?", value.strip())
    return int(m.group(1)) if m else None


def parse_gpus(text: str) -> list[Gpu]:
    """Parse the ``--query-gpu`` CSV (with header) into :class:`Gpu` objects.

    Raises:
        ValueError: the header lacks a required field (not nvidia-smi's query output).
    """
    rows = _rows(text)
    if rows and not set(GPU_FIELDS) <= set(rows[0]):
        raise ValueError(f"unexpected nvidia-smi header: {sorted(rows[0])}")
    return [
        Gpu(
            index=int(r["index"]),
            uuid=r["uuid"],
            name=r["name"],
            total_mib=_mib(r["memory.total"]),
            used_mib=_mib(r["memory.used"]),
            driver=r["driver_version"],
        )
        for r in rows
    ]


def parse_apps(text: str) -> list[GpuApp]:
    """Parse the ``--query-compute-apps`` CSV; a header-only or "No running processes" output is []."""
    if "No running processes" in text:
        return []
    out = []
    for r in _rows(text):
        if not r.get("pid", "").isdigit():
            continue
        out.append(
            GpuApp(
                r.get("gpu_uuid", ""), int(r["pid"]), r.get("process_name", ""), _mib(r.get("used_memory"))
            )
        )
    return out


def driver_major(version: str) -> int | None:
    """``"590.48.01" -> 590``; None when unparsable."""
    m = re.match(r"(\d+)", version.strip())
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class GpuScan:
    """What ``nvidia-smi`` (:data:`GPU_QUERY`) said on this host.

    Attributes:
        smi: the nvidia-smi path; None when it is not on PATH (no NVIDIA driver installed).
        output: what it printed (with stderr when it failed); '' when it did not run.
        gpus: the GPUs it listed; empty when it failed or listed none.
        error: why no GPU list was read: nvidia-smi's message (or its exit status) when it
            exited non-zero, or :func:`parse_gpus`' header error; None when the list was read.
    """

    smi: str | None
    output: str = ""
    gpus: tuple[Gpu, ...] = ()
    error: str | None = None


def run_query(argv: Sequence[str]) -> tuple[int, str]:
    """Run ``argv`` (an nvidia-smi query) for :func:`scan`: ``(exit status, output)``.

    The output is stdout, plus stderr when the exit status is not 0; a query that does not
    answer within :data:`QUERY_TIMEOUT` seconds is exit status 124 with a message saying so.
    """
    try:
        done = proc.run(list(argv), capture=True, check=False, echo=False, timeout=QUERY_TIMEOUT)
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]} did not answer within {QUERY_TIMEOUT:.0f} s"
    return done.returncode, done.stdout if done.returncode == 0 else done.stdout + done.stderr


def scan(runner: Runner = run_query, which: Callable[[str], str | None] = shutil.which) -> GpuScan:
    """Ask nvidia-smi for the GPUs; never raises for a missing or failing nvidia-smi (see :class:`GpuScan`).

    Args:
        runner: runs :data:`GPU_QUERY` (default :func:`run_query`; preflight passes its own).
        which: finds ``nvidia-smi`` (default: on this process's PATH).
    """
    smi = which("nvidia-smi")
    if smi is None:
        return GpuScan(None)
    rc, out = runner(GPU_QUERY)
    if rc != 0:
        return GpuScan(smi, out, error=out.strip() or f"nvidia-smi exited with status {rc}")
    try:
        gpus = parse_gpus(out)
    except ValueError as exc:
        return GpuScan(smi, out, error=str(exc))
    return GpuScan(smi, out, tuple(gpus))


def freest(found: GpuScan) -> tuple[str | None, str]:
    """``(index, reason)`` of the GPU with the least memory in use (guide 2 "找一张空闲卡").

    What ``ocrstack serve`` sets ``CUDA_VISIBLE_DEVICES`` to when no ``--gpu`` is given. Ties
    (and unknown usage, ranked last) go to the lowest index. Index None means no usable GPU;
    ``reason`` says why (nvidia-smi absent, failing -- its first output line -- or listing none).
    """
    if found.smi is None:
        return None, "no NVIDIA GPU found (nvidia-smi not on PATH)"
    if not found.gpus:
        first = next((ln.strip() for ln in found.output.splitlines() if ln.strip()), "no output")
        if first.startswith("index"):
            return None, "nvidia-smi listed no GPUs"
        return None, f"nvidia-smi failed: {first[:160]}"
    g = min(found.gpus, key=lambda g: (g.used_mib if g.used_mib is not None else float("inf"), g.index))
    return str(g.index), f"GPU {g.index} ({g.name}) is the freest ({g.used_mib}/{g.total_mib} MiB used)"
