"""Options of ``ocrstack toolchain check`` and ``toolchain fix-pip-cuda``, each declared once
(:mod:`ocrstack.core.options`).

``ocrstack.commands.toolchain`` derives its flags from :class:`ToolchainOptions` and
:class:`FixOptions` and builds them from the parsed flags; Python callers (preflight, tests)
construct them directly with the same defaults.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ocrstack.core import options as opt


def this_python() -> str:
    """The running interpreter (the default environment to look at)."""
    return sys.executable


@dataclass(frozen=True)
class ToolchainOptions:
    """Inputs of :func:`ocrstack.toolchain.check.check`.

    Attributes beyond the flags' help: ``nvcc`` None is ``$CUDA_HOME/bin/nvcc``, then ``nvcc`` on
    PATH; ``cuda_home`` is the toolkit root with ``include/`` (None: ``$CUDA_HOME`` or nvcc's
    ``..``).
    """

    python: str = opt.option(
        default_factory=this_python,
        flags=("--python",),
        help="build environment interpreter (torch is read there)",
    )
    nvcc: str | None = opt.option(
        None, flags=("--nvcc",), help="nvcc to check (default: $CUDA_HOME/bin/nvcc, then PATH)"
    )
    cxx: str | None = opt.option(
        None, flags=("--cxx",), help="host C++ compiler (default: $CUDAHOSTCXX, $CXX, g++)"
    )
    cuda_home: Path | None = opt.option(
        None, flags=("--cuda-home",), convert=Path, help="toolkit root (default: $CUDA_HOME)"
    )


@dataclass(frozen=True)
class FixOptions:
    """Inputs of :func:`ocrstack.toolchain.pipcuda.fix_environment` (guide 3.2 fix-up).

    Attributes beyond the flags' help: the toolkit fixed is ``cuda_root`` when given, else the
    ``nvidia/cu13`` of ``python``'s site-packages (the command line takes one of the two);
    ``driver`` False (``--no-driver``) always generates the libcuda stub, True looks for a
    driver's ``libcuda.so.1`` first.
    """

    python: str = opt.option(
        default_factory=this_python,
        flags=("--python",),
        exclusive="toolkit",
        help="interpreter whose site-packages/nvidia/cu13 is fixed (default: this one)",
    )
    cuda_root: Path | None = opt.option(
        None,
        flags=("--cuda-root",),
        convert=Path,
        exclusive="toolkit",
        help="the .../site-packages/nvidia/cu13 directory",
    )
    cc: str | None = opt.option(
        None, flags=("--cc",), help="C compiler for the libcuda stub (default: $CC or cc)"
    )
    stub_wheel: Path | None = opt.option(
        None,
        flags=("--stub-wheel",),
        convert=Path,
        help="local nvidia_cuda_nvcc-*.whl to take bin/crt/*.stub from (offline)",
    )
    stub_version: str | None = opt.option(
        None,
        flags=("--stub-version",),
        help="nvidia-cuda-nvcc version to download the stubs from (default: the nvJitLink pin)",
    )
    driver: bool = opt.option(
        True,
        flags=("--no-driver",),
        help="generate the libcuda stub even if a driver's libcuda.so.1 exists",
    )
    dry_run: bool = opt.option(False, flags=("--dry-run",), help="say what would change, write nothing")
