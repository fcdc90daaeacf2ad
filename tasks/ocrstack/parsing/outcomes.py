"""Per-document outcomes of ``ocrstack parse`` and the batch report (issue 10).

Each input ends as one :class:`DocumentSummary` whose :attr:`~DocumentSummary.status` is
``ok``, ``partial`` or ``failed`` -- docling's SUCCESS / PARTIAL_SUCCESS / FAILURE per document
(``docling.datamodel.base_models.ConversionStatus``). A batch goes on past a failed document;
:func:`conclude` prints one line per bad document (path, problem, fix), the summary
``N ok, M partial, K failed`` and writes ``OUT/ocrstack-report.json`` (atomically). Exit codes
(:mod:`ocrstack.core.errors`): a batch of several inputs ends 0 when every document is ok and 7
(:class:`PartialSuccess`) otherwise; a single input writes no report and keeps its own codes
(3 bad file, 2 bad ``--pages``, 7 failed pages, 1 failed validation).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocrstack.core.errors import CheckFailed, OcrstackError, PartialSuccess
from ocrstack.core.results import Report
from ocrstack.parsing import outputs
from ocrstack.parsing.assembly.markdown import summary

#: The report file in the output directory (schema :data:`REPORT_SCHEMA`).
REPORT_NAME = "ocrstack-report.json"
REPORT_SCHEMA = 1
OK, PARTIAL, FAILED = "ok", "partial", "failed"


@dataclass
class DocumentSummary:
    """What happened to one input.

    ``error`` is set when the document failed as a whole (unreadable file, page selection beyond
    its end, output held by another run, output made from another input); ``up_to_date`` when its
    finished output matched the input and settings and nothing was parsed.
    """

    source: Path
    markdown: Path
    pages: int = 0
    cached: int = 0
    failed: int = 0
    partial: int = 0  # pages with a failed block (Block.error): written, marked, retried on a rerun
    seconds: float = 0.0
    issues: list[str] = field(default_factory=list)
    validation: Report | None = None
    error: OcrstackError | None = None
    up_to_date: bool = False

    @property
    def pages_per_second(self) -> float:
        """Pages computed (not cached) per wall-clock second."""
        done = self.pages - self.cached
        return done / self.seconds if self.seconds > 0 and done > 0 else 0.0

    @property
    def status(self) -> str:
        """``failed`` (no output: :attr:`error`, or every page failed), ``partial`` (written with
        failed pages or blocks, or validation failed) or ``ok``."""
        if self.error is not None or (self.pages and self.failed == self.pages):
            return FAILED
        if self.failed or self.partial or (self.validation is not None and not self.validation.ok):
            return PARTIAL
        return OK

    def problem(self) -> str:
        """One line naming the file, what is wrong and the fix (for a document that is not ok)."""
        if self.error is not None:
            text = self.error.render()
            return text if text.startswith(str(self.source)) else f"{self.source}: {text}"
        what = []
        if self.failed:
            what.append(f"{self.failed} of {self.pages} page(s) failed")
        if self.partial:
            what.append(f"{self.partial} page(s) with failed blocks")
        if self.validation is not None and not self.validation.ok:
            what.append(f"{len(self.validation.failures())} validation check(s) failed")
        return (
            f"{self.source}: {', '.join(what)} -- fix: see {self.markdown.with_suffix('.blocks.json').name} "
            "(pages and blocks with an error); rerun the same command to retry only those"
        )


@dataclass
class RunSummary:
    """All inputs of one ``parse`` call."""

    documents: list[DocumentSummary] = field(default_factory=list)

    @property
    def failed_pages(self) -> int:
        return sum(d.failed for d in self.documents)

    def counts(self) -> dict[str, int]:
        """Documents per status, plus ``up_to_date`` (ok documents skipped, nothing parsed)."""
        out = {OK: 0, PARTIAL: 0, FAILED: 0}
        for d in self.documents:
            out[d.status] += 1
        out["up_to_date"] = sum(1 for d in self.documents if d.up_to_date)
        return out

    def line(self) -> str:
        """``N ok (U up to date), M partial, K failed``."""
        c = self.counts()
        fresh = f" ({c['up_to_date']} up to date)" if c["up_to_date"] else ""
        return f"{c[OK]} ok{fresh}, {c[PARTIAL]} partial, {c[FAILED]} failed"


def summary_line(d: DocumentSummary) -> str:
    """One line per input: pages, cache hits, failures, speed (or "all pages from cache": no
    page was computed, so a rate would read as a misleading 0.00 pages/s), issues."""
    if d.error is not None:
        return f"FAILED {d.problem()}"
    if d.up_to_date:
        return f"{d.markdown}: up to date (same input and settings), skipped"
    speed = "all pages from cache" if d.pages and d.cached == d.pages else f"{d.pages_per_second:.2f} pages/s"
    return (
        f"{d.markdown}: {d.pages} page(s), {d.cached} from cache, {d.failed} failed, "
        + (f"{d.partial} with failed blocks, " if d.partial else "")
        + f"{speed}, "
        + summary(d.issues, len(d.validation.failures()) if d.validation else d.failed, d.markdown)
    )


def report(run: RunSummary, stopped: str | None = None) -> dict[str, Any]:
    """The ``ocrstack-report.json`` document: counts and one entry per document.

    Each entry: ``source``, ``markdown``, ``status`` (ok/partial/failed), ``up_to_date``,
    ``pages``, ``cached``, ``failed_pages``, ``partial_pages``, ``seconds`` and ``error`` (the
    one-line problem with its fix, or None). ``markdown`` is None for a document that failed as a
    whole (:attr:`DocumentSummary.error`: this run wrote no Markdown for it, and a NAME.md already
    there is not its output); a document whose every page failed was written, with each page
    marked failed, and keeps its path. ``stopped`` names why the run ended early (then the
    documents not listed were not started).
    """
    return {
        "schema": REPORT_SCHEMA,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "summary": run.counts(),
        "stopped": stopped,
        "documents": [
            {
                "source": str(d.source),
                "markdown": None if d.error is not None else str(d.markdown),
                "status": d.status,
                "up_to_date": d.up_to_date,
                "pages": d.pages,
                "cached": d.cached,
                "failed_pages": d.failed,
                "partial_pages": d.partial,
                "seconds": round(d.seconds, 3),
                "error": None if d.status == OK else d.problem(),
            }
            for d in run.documents
        ],
    }


def write_report(out_dir: Path, run: RunSummary, stopped: str | None = None) -> Path:
    """Write :func:`report` to ``out_dir/ocrstack-report.json`` (temporary file + rename)."""
    path = out_dir / REPORT_NAME
    outputs.atomic_write_json(path, report(run, stopped))
    return path


def conclude(run: RunSummary, out_dir: Path, single: bool, say: Callable[[str], None]) -> RunSummary:
    """Print the per-document lines and the summary, write the report (several inputs only: one
    input's outcome is its exit code and NAME.blocks.json), raise for the exit code.

    Raises:
        OcrstackError: ``single`` and the one document failed as a whole: its own error.
        PartialSuccess: pages or blocks failed (single), or any document not ok (batch).
        CheckFailed: ``single`` and all pages parsed but validation failed (guide 6).
    """
    for d in run.documents:
        if d.error is not None and not single:
            continue  # named once, with its fix, in the list of bad documents below
        say(summary_line(d))
        if d.validation is not None and not d.up_to_date:
            say(d.validation.to_text())
    if not single:
        path = write_report(out_dir, run)  # one input: its exit code and blocks.json say it all
        say(f"ocrstack parse: {run.line()} (report: {path})")
        bad = [d for d in run.documents if d.status != OK]
        for d in bad:
            say(f"{d.status.upper()} {d.problem()}")
        if bad:
            raise PartialSuccess(
                f"{run.line()}; every good document was written",
                f"fix the files named above (details in {path}) and rerun the same command: "
                "finished documents are skipped as up to date",
            )
        return run
    (d,) = run.documents
    if d.error is not None:
        raise d.error
    if d.failed or d.partial:
        partial = f", {d.partial} page(s) with failed blocks" if d.partial else ""
        raise PartialSuccess(
            f"{d.failed} page(s) failed{partial}; the rest was written",
            "see the page and block errors above and in NAME.blocks.json (blocks with status failed); "
            "rerun the same command to retry only those",
        )
    if d.validation is not None and not d.validation.ok:
        raise CheckFailed(
            f"output validation failed for {d.markdown}",
            "see the failed checks above (page and block named)",
        )
    return run
