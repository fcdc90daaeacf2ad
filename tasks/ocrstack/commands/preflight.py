"""``ocrstack preflight``: GPU, driver, VRAM, free GPU, disk, Python and toolchain checks (guide 2)."""

from __future__ import annotations

import argparse

from ocrstack.commands import add_json
from ocrstack.core import options as opt
from ocrstack.preflight.options import PreflightOptions


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``preflight`` verb; its flags come from
    :class:`~ocrstack.preflight.options.PreflightOptions`."""
    p = sub.add_parser(
        "preflight", help="check GPU, driver, VRAM, disk and Python before installing (guide 2)"
    )
    opt.add_arguments(p, PreflightOptions)
    add_json(p)
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from ocrstack import preflight

    opts = opt.build(PreflightOptions, opt.namespace_values(args, PreflightOptions), json=args.json)
    report = preflight.run(opts)
    print(report.to_json() if opts.json else report.to_text())  # the whole report, whatever the verdict
    report.raise_if_failed("preflight")
    report.raise_if_incomplete()  # required checks not run (no GPU here) are no pass: exit 1
    return 0
