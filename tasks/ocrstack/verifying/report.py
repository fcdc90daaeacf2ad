"""The ``ocrstack verify`` result: summary statements (guide 10) and the JSON/text report files."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ocrstack.core.results import Report, Status
from ocrstack.verifying.backends import BackendResult


@dataclass
class VerifyResult:
    """The report, the backend results that were produced, and the summary lines."""

    report: Report
    results: list[BackendResult] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        """Report JSON plus ``summary`` and ``backends``."""
        data = json.loads(self.report.to_json())
        data["summary"] = self.summary
        data["backends"] = [asdict(r) for r in self.results]
        return json.dumps(data, indent=2, ensure_ascii=False)

    def to_text(self) -> str:
        """Report text plus the summary lines."""
        return self.report.to_text() + "\n\nSummary:\n" + "\n".join(f"  - {s}" for s in self.summary)


#: Report title and summary wording of a ``--tiny`` run (``nox -s verify``, CI): the comparison ran on
#: a random CPU checkpoint, so nobody may read it as a check of the deployed model or a server.
TINY_TITLE = (
    "ocrstack verify --tiny: guide 7 two-backend comparison on the TINY RANDOM CPU CHECKPOINT "
    "(CI self-test of the comparison; NOT the deployed model, NOT your server)"
)
TINY_SCOPE = (
    "Scope: the two backends compared were the tiny random checkpoint in-process and a `transformers "
    "serve` started for it here -- NOT the deployed model and NOT your server. This shows the "
    "comparison works, not that your deployment agrees; for that run `ocrstack verify --image IMG "
    "--tf-model ./models/MiniCPM-OCR-1.0 --server-url URL` on the GPU host (guide 7)."
)
TITLE = "ocrstack verify (guide 6 outputs, guide 6 DSpark, guide 7 two-backend)"


def summarize(report: Report, *, tiny: bool = False) -> list[str]:
    """Plain statements about what was and was not shown (guide 10).

    ``tiny``: the two-backend check ran on the tiny random checkpoint (``--tiny``); every
    two-backend statement says so and :data:`TINY_SCOPE` is added.
    """
    lines = _summary_lines(report)
    if tiny:
        on = " on the TINY RANDOM CPU checkpoint (not the deployed model)"
        lines[0] = (
            lines[0]
            .replace("Both backends agree", "Both backends agree" + on, 1)
            .replace("Two-backend verbatim check", "Two-backend verbatim check" + on, 1)
        )
        lines.insert(1, TINY_SCOPE)
    return lines


def _summary_lines(report: Report) -> list[str]:
    by = report.checks
    lines = []
    cmp_checks = [c for c in by if c.name.startswith("two-backend[")]
    if not cmp_checks:
        why = next((c.detail for c in by if c.name == "two-backend"), "the comparison did not run")
        tail = "" if "not claimed" in why else " Agreement is not claimed."
        lines.append(f"Two-backend verbatim check NOT RUN: {why.rstrip('.')}.{tail}")
    elif any(c.status is Status.FAIL for c in cmp_checks):
        lines.append("Two-backend verbatim check FAILED: the backends do not agree.")
    elif all(
        c.status is Status.PASS for c in cmp_checks if c.name.endswith((":output", ":prompt-tokens"))
    ) and any(c.name.endswith(":output") and c.status is Status.PASS for c in cmp_checks):
        names = [c.detail for c in by if c.name.startswith("backend:") and c.status is Status.PASS]
        lines.append(
            "Both backends agree: same prompt tokens and identical output (" + "; ".join(names) + ")."
        )
    else:
        lines.append(
            "Two-backend verbatim check incomplete: see the not-run checks above. Agreement is not claimed."
        )
    ds = [c for c in by if c.name.startswith("dspark")]
    if not ds or all(c.status is Status.NOT_RUN for c in ds):
        lines.append("DSpark activity NOT CHECKED (no /metrics scrape): it is not claimed to be active.")
    elif any(c.status is Status.FAIL for c in ds):
        lines.append("DSpark NOT active according to /metrics (see the dspark checks).")
    else:
        lines.append("DSpark active: speculative-decoding counters present and growing in /metrics.")
    outs = [c for c in by if c.name.startswith("output")]
    if not outs or all(c.status is Status.NOT_RUN for c in outs):
        lines.append("Output checks NOT RUN (no Markdown file given).")
    elif any(c.status is Status.FAIL for c in outs):
        lines.append("Output checks FAILED (see the output checks).")
    else:
        lines.append("Output checks passed.")
    return lines


def write_reports(result: VerifyResult, directory: Path) -> tuple[Path, Path]:
    """Write ``verify-report.json`` and ``verify-report.txt`` atomically; returns both paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in (("verify-report.json", result.to_json()), ("verify-report.txt", result.to_text())):
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        os.replace(tmp, directory / name)
        paths.append(directory / name)
    return paths[0], paths[1]
