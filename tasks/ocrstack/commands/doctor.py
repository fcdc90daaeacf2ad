"""``ocrstack doctor [LOGFILE|-]``: explain known build / serve / parse failures in a log."""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass(frozen=True)
class DoctorOptions:
    """Options of ``ocrstack doctor``.

    Attributes:
        log: log file path, or ``-`` for stdin.
        stages: limit to rules of these stages (empty = all).
        json: print JSON instead of text.
        list_rules: print the rules instead of diagnosing.
    """

    log: str = "-"
    stages: tuple[str, ...] = ()
    json: bool = False
    list_rules: bool = False


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``doctor`` verb."""
    from ocrstack.doctor.rules import STAGES

    p = sub.add_parser(
        "doctor",
        help="diagnose a build/serve/parse log with the known-error rules (guide 8)",
        description="Match each line of a log against the known-error rules "
        "(tasks/ocrstack/data/doctor_rules.yaml) and print the cause and fix of every match "
        "with its line number.",
    )
    p.add_argument(
        "log", nargs="?", default="-", metavar="LOGFILE", help="log file, or - for stdin (default)"
    )
    p.add_argument(
        "--stage", action="append", choices=STAGES, default=[], help="only rules of this stage (repeatable)"
    )
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.add_argument("--list", dest="list_rules", action="store_true", help="list the rules and exit")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from ocrstack.doctor import cli

    opts = DoctorOptions(log=args.log, stages=tuple(args.stage), json=args.json, list_rules=args.list_rules)
    return cli.run(opts)
