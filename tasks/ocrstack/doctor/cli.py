"""The ``ocrstack doctor`` stage: read a log, diagnose, print (text or JSON)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ocrstack.doctor.engine import diagnose, read_log, render, to_json
from ocrstack.doctor.rules import load_rules

if TYPE_CHECKING:
    from ocrstack.commands.doctor import DoctorOptions


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
    """Diagnose ``opts.log`` and print the findings; returns 0 (a diagnosis is not a failure).

    Raises:
        InputError: the log file does not exist or cannot be read.
    """
    if opts.list_rules:
        print(list_text(opts.json))
        return 0
    text = read_log(opts.log)
    name = "stdin" if opts.log == "-" else opts.log
    findings = diagnose(text, stages=opts.stages or None)
    print(to_json(findings, name) if opts.json else render(findings, name))
    return 0
