"""Diagnose build, serve and parse logs with the rules in ``ocrstack/data/doctor_rules.yaml``.

Public API (used by the build, serve and wait-ready runners when a step fails)::

    from ocrstack.doctor import diagnose, render
    findings = diagnose(log_text)            # list[Finding], sorted by line number
    print(render(findings))                  # "nothing matched" when empty

Each rule is data (guide 8 rows plus public failure classes); see
:mod:`ocrstack.doctor.rules` for the file format.
"""

from __future__ import annotations

from ocrstack.doctor.cli import DoctorOptions
from ocrstack.doctor.engine import Finding, LogDoctor, diagnose, diagnose_file, render, to_json
from ocrstack.doctor.rules import Rule, load_rules

__all__ = [
    "DoctorOptions",
    "Finding",
    "LogDoctor",
    "Rule",
    "diagnose",
    "diagnose_file",
    "load_rules",
    "render",
    "to_json",
]
