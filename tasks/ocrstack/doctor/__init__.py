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

import importlib
from typing import Any

#: Each re-exported name -> the module that defines it, imported on first use (PEP 562), so that
#: importing one light submodule (options, constants) does not load the whole package.
_HOME = {
    "diagnose": "ocrstack.doctor.engine",
    "diagnose_file": "ocrstack.doctor.engine",
    "DoctorOptions": "ocrstack.doctor.cli",
    "Finding": "ocrstack.doctor.engine",
    "load_rules": "ocrstack.doctor.rules",
    "render": "ocrstack.doctor.engine",
    "Rule": "ocrstack.doctor.rules",
    "to_json": "ocrstack.doctor.engine",
}


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


def __getattr__(name: str) -> Any:
    """Import ``name``'s defining module on first access (:data:`_HOME`)."""
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
