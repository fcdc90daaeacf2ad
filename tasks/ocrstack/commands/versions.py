"""``ocrstack versions show`` and ``ocrstack versions check --env NAME``."""

from __future__ import annotations

import argparse

from ocrstack import versions
from ocrstack.commands import add_json
from ocrstack.core import options as opt
from ocrstack.core.errors import EnvironmentMismatch
from ocrstack.versions.options import CheckOptions, ShowOptions


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``versions`` verb and its ``show``/``check`` subcommands; their flags come from
    :mod:`ocrstack.versions.options`."""
    p = sub.add_parser("versions", help="show pins from envs/versions.yaml or check installed versions")
    vsub = p.add_subparsers(dest="versions_command", metavar="ACTION", required=True)
    show = vsub.add_parser("show", help="print the resolved pins")
    opt.add_arguments(show, ShowOptions)
    show.set_defaults(handler=_show)
    chk = vsub.add_parser("check", help="compare installed versions with the pins for one environment")
    opt.add_arguments(chk, CheckOptions)
    add_json(chk)
    chk.set_defaults(handler=_check)


def _show(args: argparse.Namespace) -> int:
    show = opt.build(ShowOptions, opt.namespace_values(args, ShowOptions))
    print(versions.show(show.file), end="")
    return 0


def _check(args: argparse.Namespace) -> int:
    check = opt.build(CheckOptions, opt.namespace_values(args, CheckOptions))
    report = versions.check(check.env, check.file)
    print(report.to_json() if args.json else report.to_text())
    report.raise_if_failed(f"versions check --env {check.env} (envs/versions.yaml)", EnvironmentMismatch)
    return 0
