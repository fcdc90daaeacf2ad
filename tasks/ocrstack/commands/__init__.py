"""Subcommand registry: each name is a module here with ``register(subparsers)``.

Add one line per verb; keep the modules thin (argument parsing -> options -> stage call).
Options shared by several verbs are declared here once (:class:`Output`: ``--json``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ocrstack.core import options as opt

COMMANDS: list[str] = [
    "versions",
    "doctor",
    "preflight",
    "fetch",
    "verify",
    "lock",
    "toolchain",
    "build",
    "parse",
    "serve",
    "wait_ready",
    "bench",
    "deploy",
    "api",
    "quality",
]


@dataclass(frozen=True)
class Output:
    """How a verb prints its result: ``--json`` (declared once for every verb that has it)."""

    json: bool = opt.option(False, flags=("--json",), help="{when}print {what} as JSON")


def add_json(parser: argparse.ArgumentParser, what: str = "the report", when: str = "") -> None:
    """Add ``--json`` to ``parser``, its help worded for the verb: ``{when}print {what} as JSON``,
    e.g. ``when="with --dry-run: "``, ``what="the plan"``. ``args.json`` is always set (the
    declared default when the flag is absent), so a handler reads it directly."""
    opt.add_arguments(parser, Output, what=what, when=when)
    parser.set_defaults(json=Output.json)
