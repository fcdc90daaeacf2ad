"""``ocrstack toolchain check`` and ``ocrstack toolchain fix-pip-cuda`` (guide 3.2)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ocrstack.commands import add_json
from ocrstack.core.errors import CheckFailed


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``toolchain`` verb with ``check`` and ``fix-pip-cuda``."""
    p = sub.add_parser("toolchain", help="check the CUDA toolchain or repair the pip-wheel CUDA layout")
    tsub = p.add_subparsers(dest="toolchain_command", metavar="ACTION", required=True)

    chk = tsub.add_parser("check", help="nvcc version, nvcc CUDA major == torch's, host gcc, cuda_fp16.h")
    chk.add_argument(
        "--python", default=sys.executable, help="build environment interpreter (torch is read there)"
    )
    chk.add_argument("--nvcc", default=None, help="nvcc to check (default: $CUDA_HOME/bin/nvcc, then PATH)")
    chk.add_argument("--cxx", default=None, help="host C++ compiler (default: $CUDAHOSTCXX, $CXX, g++)")
    chk.add_argument("--cuda-home", type=Path, default=None, help="toolkit root (default: $CUDA_HOME)")
    add_json(chk)
    chk.set_defaults(handler=_check)

    fix = tsub.add_parser("fix-pip-cuda", help="guide 3.2 symlink fix-up of the pip CUDA wheels (idempotent)")
    where = fix.add_mutually_exclusive_group()
    where.add_argument(
        "--python",
        default=None,
        help="interpreter whose site-packages/nvidia/cu13 is fixed (default: this one)",
    )
    where.add_argument(
        "--cuda-root", type=Path, default=None, help="the .../site-packages/nvidia/cu13 directory"
    )
    fix.add_argument("--cc", default=None, help="C compiler for the libcuda stub (default: $CC or cc)")
    fix.add_argument(
        "--stub-wheel",
        type=Path,
        default=None,
        help="local nvidia_cuda_nvcc-*.whl to take bin/crt/*.stub from (offline)",
    )
    fix.add_argument(
        "--stub-version",
        default=None,
        help="nvidia-cuda-nvcc version to download the stubs from (default: the nvJitLink pin)",
    )
    fix.add_argument(
        "--no-driver",
        action="store_true",
        help="generate the libcuda stub even if a driver's libcuda.so.1 exists",
    )
    fix.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")
    add_json(fix)
    fix.set_defaults(handler=_fix)


def _check(args: argparse.Namespace) -> int:
    from ocrstack.toolchain.check import ToolchainOptions, check

    report = check(
        ToolchainOptions(python=args.python, nvcc=args.nvcc, cxx=args.cxx, cuda_home=args.cuda_home)
    )
    print(report.to_json() if args.json else report.to_text())
    report.raise_if_failed("toolchain check")
    return 0


def _fix(args: argparse.Namespace) -> int:
    from ocrstack.toolchain import locate, pipcuda

    root = args.cuda_root or locate.pip_cuda_root(args.python or sys.executable)
    kwargs = {"driver": None} if args.no_driver else {}
    result = pipcuda.fix(
        root,
        cc=args.cc,
        stub_wheel=args.stub_wheel,
        stub_version=args.stub_version,
        dry_run=args.dry_run,
        **kwargs,
    )
    print(result.report.to_json() if args.json else result.report.to_text())
    print(f"changed: {', '.join(result.changed) if result.changed else 'nothing'}", file=sys.stderr)
    if not result.ok:
        bad = next(c for c in result.report.checks if c.status.value == "fail")
        raise CheckFailed(f"fix-pip-cuda: {bad.name}: {bad.detail}", bad.fix or None)
    return 0
