"""``ocrstack doctor [LOGFILE|-]``: explain known build / serve / parse failures in a log."""

from __future__ import annotations

import argparse

from ocrstack.commands import add_json
from ocrstack.core import options as opt
from ocrstack.doctor.cli import DoctorOptions, run


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``doctor`` verb; its flags come from :class:`~ocrstack.doctor.cli.DoctorOptions`
    (the log stays a positional argument)."""
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
    opt.add_arguments(p, DoctorOptions)
    add_json(p, what="findings")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    return run(
        opt.build(DoctorOptions, opt.namespace_values(args, DoctorOptions), log=args.log, json=args.json)
    )
