"""Diagnose build, serve and parse logs with the rules in ``ocrstack/data/doctor_rules.yaml``.

Shared, below the verbs and stages: the build runner (a failed step's log), server readiness
(serve, wait-ready, verify --tiny: a fatal server log line) and ``ocrstack doctor`` call it::

    from ocrstack.doctor import diagnose, render
    findings = diagnose(log_text)            # list[Finding], sorted by line number
    print(render(findings))                  # "nothing matched" when empty

Each rule is data (guide 8 rows plus public failure classes); see
:mod:`ocrstack.doctor.rules` for the file format.
"""

from __future__ import annotations

from ocrstack.doctor.cli import DoctorOptions
from ocrstack.doctor.engine import Finding, diagnose, diagnose_file, render, to_json
from ocrstack.doctor.rules import Rule, load_rules

__all__ = [
    "DoctorOptions",
    "Finding",
    "Rule",
    "diagnose",
    "diagnose_file",
    "load_rules",
    "render",
    "to_json",
]
