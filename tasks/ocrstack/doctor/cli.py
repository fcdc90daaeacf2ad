"""The ``ocrstack doctor`` verb: read a log, diagnose, print (text or JSON)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ocrstack.core import options as opt
from ocrstack.core.errors import CheckFailed
from ocrstack.doctor.engine import diagnose, read_log, render, to_json
from ocrstack.doctor.rules import STAGES, load_rules


@dataclass(frozen=True)
class DoctorOptions:
    """Options of ``ocrstack doctor``; the flags are declared here once
    (:mod:`ocrstack.core.options`) and ``ocrstack.commands.doctor`` derives them.

    Attributes beyond the flags' help: ``log`` (the positional argument) is a log file path, or
    ``-`` for stdin; ``stages`` empty means all; ``json`` prints JSON instead of text (the
    shared ``--json``, :class:`ocrstack.commands.Output`).
    """

    log: str = "-"
    stages: tuple[str, ...] = opt.option(
        (),
        flags=("--stage",),
        many=True,
        choices=STAGES,
        metavar="{" + ",".join(STAGES) + "}",
        help="only rules of this stage (repeatable)",
    )
    json: bool = False
    list_rules: bool = opt.option(False, flags=("--list",), help="list the rules and exit")
    exit_zero: bool = opt.option(
        False,
        flags=("--exit-zero",),
        help="exit 0 even when a known problem matched (default: exit 1 when one did)",
    )


def list_text(as_json: bool = False) -> str:
    """Return every rule (id, stage, regex, cause, fix, source) as text or JSON."""
    rules = load_rules()
    if as_json:
        return json.dumps(
            [
                {
                    "id": r.id,
                    "stage": r.stage,
                    "regex": r.pattern.pattern if r.pattern else None,
                    "cause": r.cause,
                    "fix": r.fix,
                    "source": r.source,
                    "guide_row": r.guide_row,
                }
                for r in rules
            ],
            indent=2,
            ensure_ascii=False,
        )
    lines = []
    for r in rules:
        kind = r.pattern.pattern if r.pattern else "(advice only: the symptom prints no message)"
        lines += [
            f"[{r.id}] {r.stage}: {kind}",
            f"  cause: {r.cause}",
            f"  fix:   {r.fix}",
            f"  source: {r.source}",
        ]
    return "\n".join(lines)


def run(opts: DoctorOptions) -> int:
    """Diagnose ``opts.log`` and print the findings (stdout); returns 0 when nothing matched.

    Exit status follows linters (ruff, flake8): a log with at least one known problem is a
    failed check, so ``ocrstack doctor build.log && next-step`` stops there. ``exit_zero``
    keeps 0 for callers that only want the report.

    Raises:
        CheckFailed: at least one rule matched and ``exit_zero`` is false (exit 1; the
            findings are printed first).
        InputError: the log file does not exist or cannot be read.
    """
    if opts.list_rules:
        print(list_text(opts.json))
        return 0
    text = read_log(opts.log)
    name = "stdin" if opts.log == "-" else opts.log
    findings = diagnose(text, stages=opts.stages or None)
    print(to_json(findings, name) if opts.json else render(findings, name))
    if findings and not opts.exit_zero:
        ids = sorted({f.rule_id for f in findings})
        raise CheckFailed(
            f"doctor: {len(findings)} known problem(s) found in {name} ({', '.join(ids)})",
            "apply the fixes printed above; pass --exit-zero to exit 0 when only the report is wanted",
        )
    return 0
