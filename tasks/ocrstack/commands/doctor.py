"""``ocrstack doctor [LOGFILE|-]``: explain known build / serve / parse failures in a log."""

from __future__ import annotations

import argparse

from ocrstack.commands import add_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``doctor`` verb."""
    from ocrstack.doctor.rules import STAGES

    p = sub.add_parser(
        "doctor",
        help="diagnose a build/serve/parse log with the known-error rules (guide 8)",
        description="Match each line of a log against the known-error rules "
        "(tasks/ocrstack/data/doctor_rules.yaml) and print the cause and fix of every match "
        "with its line number. Exit status, like a linter: 0 when no rule matched, 1 when at "
        "least one did (--exit-zero: 0 anyway), 3 when the log cannot be read.",
    )
    p.add_argument(
        "log", nargs="?", default="-", metavar="LOGFILE", help="log file, or - for stdin (default)"
    )
    p.add_argument(
        "--stage", action="append", choices=STAGES, default=[], help="only rules of this stage (repeatable)"
    )
    add_json(p, what="findings")
    p.add_argument("--list", dest="list_rules", action="store_true", help="list the rules and exit")
    p.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when a known problem matched (default: exit 1 when one did)",
    )
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from ocrstack.doctor import cli

    opts = cli.DoctorOptions(
        log=args.log,
        stages=tuple(args.stage),
        json=args.json,
        list_rules=args.list_rules,
        exit_zero=args.exit_zero,
    )
    return cli.run(opts)
