"""nvcc / host gcc compatibility in preflight, delegated to ``ocrstack toolchain check``.

Only runs when a CUDA toolchain is present (``$CUDA_HOME/bin/nvcc`` or ``nvcc`` on PATH);
the checks themselves (nvcc release, nvcc CUDA major vs torch's, host gcc accepted by
nvcc's ``crt/host_config.h``, ``cuda_fp16.h`` finds ``nv/target``) live in
:mod:`ocrstack.toolchain.check` so there is one implementation.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from ocrstack.core.results import Check, Status


def find_nvcc(env: Mapping[str, str], which: Callable[[str], str | None] = shutil.which) -> str | None:
    """``$CUDA_HOME/bin/nvcc`` when it exists, else ``nvcc`` on PATH, else None."""
    home = env.get("CUDA_HOME")
    if home and Path(home, "bin", "nvcc").is_file():
        return str(Path(home, "bin", "nvcc"))
    return which("nvcc")


def toolchain_checks(
    runner: object = None,
    *,
    env: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    python: str | None = None,
) -> list[Check]:
    """Return the toolchain checks prefixed ``toolchain:``; one not-run check when there is no nvcc.

    ``runner`` is accepted for symmetry with the other gatherers; the toolchain module runs
    its own commands through :func:`ocrstack.core.proc.run`.
    """
    env = os.environ if env is None else env
    nvcc = find_nvcc(env, which)
    if nvcc is None:
        return [
            Check(
                "toolchain",
                Status.NOT_RUN,
                "no CUDA toolchain here (CUDA_HOME unset, nvcc not on PATH); "
                "nvcc/gcc compatibility not checked",
                "run `ocrstack toolchain check` inside the build environment (pixi run -e vllm-build ...)",
            )
        ]
    try:
        from ocrstack.toolchain.check import check
        from ocrstack.toolchain.options import ToolchainOptions
    except ImportError as exc:  # the toolchain module is optional at this layer
        return [Check("toolchain", Status.NOT_RUN, f"ocrstack.toolchain.check unavailable ({exc})")]
    report = check(ToolchainOptions(python=python or sys.executable, nvcc=nvcc))
    return [
        Check(f"toolchain:{c.name}", c.status, c.detail, c.fix, c.expected, c.found) for c in report.checks
    ]
