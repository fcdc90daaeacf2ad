"""``ocrstack preflight``: GPU, driver, VRAM, free GPU, disk, Python and toolchain checks (guide 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ocrstack.commands import add_json
from ocrstack.core.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``preflight`` verb."""
    p = sub.add_parser(
        "preflight", help="check GPU, driver, VRAM, disk and Python before installing (guide 2)"
    )
    p.add_argument(
        "--root", type=Path, default=Path("."), help="directory with .pixi/envs or the guide's venvs"
    )
    p.add_argument("--disk-path", type=Path, default=Path("."), help="filesystem to check for free space")
    p.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="ENV=PATH",
        help="also check this interpreter (repeatable)",
    )
    p.add_argument(
        "--require-gpu",
        action="store_true",
        help="report a missing NVIDIA GPU as a failed check, not as not-run (both exit 1)",
    )
    add_json(p)
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from ocrstack import preflight

    pythons: dict[str, str] = {}
    for item in args.python:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UsageError(
                f"--python {item!r}: expected ENV=PATH", "e.g. --python vllm=./vllm-ocr-env/bin/python"
            )
        pythons[name] = path
    opts = preflight.PreflightOptions(
        root=args.root,
        disk_path=args.disk_path,
        pythons=pythons,
        require_gpu=args.require_gpu,
        json=args.json,
    )
    report = preflight.run(opts)
    print(report.to_json() if opts.json else report.to_text())  # the whole report, whatever the verdict
    report.raise_if_failed("preflight")
    report.raise_if_incomplete()  # required checks not run (no GPU here) are no pass: exit 1
    return 0
