"""``ocrstack toolchain check`` and ``ocrstack toolchain fix-pip-cuda`` (guide 3.2)."""

from __future__ import annotations

import argparse
import sys

from ocrstack.commands import add_json
from ocrstack.core import options as opt
from ocrstack.core.errors import CheckFailed
from ocrstack.toolchain.options import FixOptions, ToolchainOptions


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``toolchain`` verb with ``check`` and ``fix-pip-cuda``; their flags come from
    :mod:`ocrstack.toolchain.options`."""
    p = sub.add_parser("toolchain", help="check the CUDA toolchain or repair the pip-wheel CUDA layout")
    tsub = p.add_subparsers(dest="toolchain_command", metavar="ACTION", required=True)

    chk = tsub.add_parser("check", help="nvcc version, nvcc CUDA major == torch's, host gcc, cuda_fp16.h")
    opt.add_arguments(chk, ToolchainOptions)
    add_json(chk)
    chk.set_defaults(handler=_check)

    fix = tsub.add_parser("fix-pip-cuda", help="guide 3.2 symlink fix-up of the pip CUDA wheels (idempotent)")
    opt.add_arguments(fix, FixOptions)
    add_json(fix)
    fix.set_defaults(handler=_fix)


def _check(args: argparse.Namespace) -> int:
    from ocrstack.toolchain.check import check

    report = check(opt.build(ToolchainOptions, opt.namespace_values(args, ToolchainOptions)))
    print(report.to_json() if args.json else report.to_text())
    report.raise_if_failed("toolchain check")
    return 0


def _fix(args: argparse.Namespace) -> int:
    from ocrstack.toolchain import pipcuda

    result = pipcuda.fix_environment(opt.build(FixOptions, opt.namespace_values(args, FixOptions)))
    print(result.report.to_json() if args.json else result.report.to_text())
    print(f"changed: {', '.join(result.changed) if result.changed else 'nothing'}", file=sys.stderr)
    if not result.ok:
        bad = next(c for c in result.report.checks if c.status.value == "fail")
        raise CheckFailed(f"fix-pip-cuda: {bad.name}: {bad.detail}", bad.fix or None)
    return 0
