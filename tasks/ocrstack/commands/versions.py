"""``ocrstack versions show`` and ``ocrstack versions check --env NAME``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ocrstack import versions
from ocrstack.commands import add_json
from ocrstack.core.errors import EnvironmentMismatch


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``versions`` verb and its ``show``/``check`` subcommands."""
    p = sub.add_parser("versions", help="show pins from envs/versions.yaml or check installed versions")
    vsub = p.add_subparsers(dest="versions_command", metavar="ACTION", required=True)
    show = vsub.add_parser("show", help="print the resolved pins")
    show.add_argument("--file", type=Path, default=None, help="versions file (default: envs/versions.yaml)")
    show.set_defaults(handler=_show)
    chk = vsub.add_parser("check", help="compare installed versions with the pins for one environment")
    chk.add_argument("--env", required=True, help="environment: vllm-build, merged, vllm, tf, sdk, cpu-test")
    chk.add_argument("--file", type=Path, default=None, help="versions file (default: envs/versions.yaml)")
    add_json(chk)
    chk.set_defaults(handler=_check)


def _show(args: argparse.Namespace) -> int:
    print(versions.show(args.file), end="")
    return 0


def _check(args: argparse.Namespace) -> int:
    report = versions.check(args.env, args.file)
    print(report.to_json() if args.json else report.to_text())
    report.raise_if_failed(f"versions check --env {args.env} (envs/versions.yaml)", EnvironmentMismatch)
    return 0
