"""What a run of ``ocrstack parse`` returns: its outcome as data, and the batch report (issue 10).

:func:`ocrstack.parsing.run.pipeline.run` returns a :class:`RunSummary`: one :class:`DocumentSummary`
per input whose :attr:`~DocumentSummary.status` is a :class:`Status` -- docling's SUCCESS /
PARTIAL_SUCCESS / FAILURE per document (``docling.datamodel.base_models.ConversionStatus``),
written ``ok`` / ``partial`` / ``failed`` in the report. A batch goes on past a failed document
and writes ``OUT/ocrstack-report.json`` (atomically, :func:`write_report`).

The run prints nothing of its outcome and raises nothing for it: its callers render it.
:meth:`RunSummary.lines` is the text ``ocrstack parse`` prints (one line per input, the
validation reports, and for a batch the summary ``N ok, M partial, K failed`` and one line per bad
document: path, problem, fix); :meth:`RunSummary.error` is the error the CLI ends with (its exit
code, :mod:`ocrstack.core.errors`) and the HTTP service records for the job: a batch of several
inputs ends 0 when every document is ok and 7 (:class:`PartialSuccess`) otherwise; a single
input writes no report and keeps its own codes (7 failed pages or blocks, 1 failed validation;
its bad file, 3, or bad ``--pages``, 2, are raised by the run before any page is parsed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from ocrstack.core.errors import CheckFailed, OcrstackError, PartialSuccess
from ocrstack.core.results import Report
from ocrstack.parsing import outputs
from ocrstack.parsing.assembly.markdown import summary

#: The report file in the output directory (schema :data:`REPORT_SCHEMA`).
REPORT_NAME = "ocrstack-report.json"
REPORT_SCHEMA = 1


class Status(str, Enum):
    """The outcome of one input; the value is the word in the report and the summary line (a
    ``str`` whose ``str()`` is its value, as ``enum.StrEnum`` of Python 3.11 would be; guide 2
    asks for Python >= 3.10)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    SUCCESS = "ok"  #: every selected page and block read, validation passed (or up to date)
    PARTIAL = "partial"  #: written, with failed pages or blocks, or a failed validation
    FAILURE = "failed"  #: failed as a whole (no output), or every page failed (written, all marked)


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
    #: seconds per stage of each written page, in page order (``timings`` of NAME.blocks.json)
    page_timings: list[dict[str, float]] = field(default_factory=list)
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
    def blocks_json(self) -> Path:
        """NAME.blocks.json beside :attr:`markdown` (the pages, blocks, errors and provenance)."""
        return self.markdown.with_suffix(".blocks.json")

    @property
    def status(self) -> Status:
        """FAILURE (:attr:`error`, or every page failed), PARTIAL (written with failed pages or
        blocks, or validation failed) or SUCCESS."""
        if self.error is not None or (self.pages and self.failed == self.pages):
            return Status.FAILURE
        if self.failed or self.partial or (self.validation is not None and not self.validation.ok):
            return Status.PARTIAL
        return Status.SUCCESS

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
            f"{self.source}: {', '.join(what)} -- fix: see {self.blocks_json.name} "
            "(pages and blocks with an error); rerun the same command to retry only those"
        )


@dataclass
class RunSummary:
    """All inputs of one ``parse`` call, in input order.

    ``single`` is true for a run of one input (no report; its own exit codes, :meth:`error`);
    ``report`` is the ``ocrstack-report.json`` written for several inputs, else None; ``seconds``
    the wall-clock time of the whole run.
    """

    documents: list[DocumentSummary] = field(default_factory=list)
    single: bool = False
    report: Path | None = None
    seconds: float = 0.0

    @property
    def failed_pages(self) -> int:
        """Pages that failed in this run (marked with their error in NAME.blocks.json)."""
        return sum(d.failed for d in self.documents)

    @property
    def status(self) -> Status:
        """SUCCESS when every document is, FAILURE when every document failed, else PARTIAL."""
        found = {d.status for d in self.documents}
        if found <= {Status.SUCCESS}:
            return Status.SUCCESS
        return Status.FAILURE if found == {Status.FAILURE} else Status.PARTIAL

    def counts(self) -> dict[str, int]:
        """Documents per status, plus ``up_to_date`` (ok documents skipped, nothing parsed)."""
        out = {str(s): 0 for s in Status}
        for d in self.documents:
            out[d.status] += 1
        out["up_to_date"] = sum(1 for d in self.documents if d.up_to_date)
        return out

    def line(self) -> str:
        """``N ok (U up to date), M partial, K failed``."""
        c = self.counts()
        fresh = f" ({c['up_to_date']} up to date)" if c["up_to_date"] else ""
        return f"{c[Status.SUCCESS]} ok{fresh}, {c[Status.PARTIAL]} partial, {c[Status.FAILURE]} failed"

    def lines(self) -> list[str]:
        """What ``ocrstack parse`` prints of the outcome (stderr), in order: one line per input
        (:func:`summary_line`) with its validation report; for several inputs then the summary
        with the report's path and one line per document that is not ok (status, problem, fix)
        -- a document failed as a whole is named there only, once."""
        out = []
        for d in self.documents:
            if d.error is not None and not self.single:
                continue
            out.append(summary_line(d))
            if d.validation is not None and not d.up_to_date:
                out.append(d.validation.to_text())
        if not self.single:
            out.append(f"ocrstack parse: {self.line()} (report: {self.report})")
            bad = [d for d in self.documents if d.status != Status.SUCCESS]
            out.extend(f"{d.status.upper()} {d.problem()}" for d in bad)
        return out

    def error(self) -> OcrstackError | None:
        """The error a run that is not a full success ends with, else None: the CLI raises it (its
        exit code), the HTTP service records its message and fix for the job.

        Several inputs: :class:`PartialSuccess` when any document is not ok. One input: its own
        error when it failed as a whole; :class:`PartialSuccess` for failed pages or blocks;
        :class:`CheckFailed` when all pages were parsed but the validation failed (guide 6).
        """
        if not self.single:
            if self.status == Status.SUCCESS:
                return None
            return PartialSuccess(
                f"{self.line()}; every good document was written",
                f"fix the files named above (details in {self.report}) and rerun the same command: "
                "finished documents are skipped as up to date",
            )
        (d,) = self.documents
        if d.error is not None:
            return d.error
        if d.failed or d.partial:
            partial = f", {d.partial} page(s) with failed blocks" if d.partial else ""
            return PartialSuccess(
                f"{d.failed} page(s) failed{partial}; the rest was written",
                "see the page and block errors above and in NAME.blocks.json (blocks with status failed); "
                "rerun the same command to retry only those",
            )
        if d.validation is not None and not d.validation.ok:
            return CheckFailed(
                f"output validation failed for {d.markdown}",
                "see the failed checks above (page and block named)",
            )
        return None


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
                "error": None if d.status == Status.SUCCESS else d.problem(),
            }
            for d in run.documents
        ],
    }


def write_report(out_dir: Path, run: RunSummary, stopped: str | None = None) -> Path:
    """Write :func:`report` to ``out_dir/ocrstack-report.json`` (temporary file + rename)."""
    path = out_dir / REPORT_NAME
    outputs.atomic_write_json(path, report(run, stopped))
    return path
