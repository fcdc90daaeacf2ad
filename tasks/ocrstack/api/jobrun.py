"""One job's parse: :func:`compute` runs :func:`ocrstack.parsing.run.pipeline.run` with the job's
options and returns its :class:`Outcome`; the job's records (store, result, callback) are the
caller's (:class:`ocrstack.api.worker.Worker`).

The same code runs in the service process (``--ray``; the tests' workers) and in the parse process
of a worker thread (:mod:`ocrstack.api.parseproc`): what it needs from around it is a
:class:`Hooks` -- the metrics, cancellation, and where a computed page is recorded.

The job runs exactly like ``ocrstack parse INPUT -o OUT --force`` (same function, same outputs,
same page cache), so a job rerun after a crash reuses every finished page. Hooks used here, all
public to the pipeline: ``Parser.parse_page`` (overridden to count pages, observe stage latencies
and honour cancellation), the recognizer's ``probe``/``close`` and its ``http_clients``/``stats``
(per-server metrics); the job's state, error and page counts come from the run's returned outcome
(:class:`ocrstack.parsing.run.outcomes.RunSummary`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ocrstack.api import storage
from ocrstack.api.observed import ObservedRecognizer
from ocrstack.api.store import Job, StoreUnavailable
from ocrstack.core.errors import OcrstackError, UsageError
from ocrstack.parsing import layout as layout_registry
from ocrstack.parsing import recognition as recognition_registry
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import pipeline
from ocrstack.parsing.run.outcomes import RunSummary
from ocrstack.parsing.stages import Parser
from ocrstack.parsing.types import PageImage

log = logging.getLogger("ocrstack.api")
#: Page timing keys (``PageResult.timings``) -> metric stage label; other keys are used as they are.
STAGE_NAMES = {"recognize": "recognition", "recognise": "recognition"}


class JobCancelled(UsageError):
    """Raised inside a running job after ``DELETE /v1/jobs/{id}`` (a fatal error: the run stops)."""


class Hooks(Protocol):
    """What :func:`compute` needs from the process it runs in."""

    #: :class:`ocrstack.api.metrics.Metrics`, or a stand-in with its attributes.
    metrics: Any

    def cancelled(self, job_id: str) -> bool:
        """True once the job was cancelled (DELETE, or its lease was lost)."""
        ...

    def page_ran(self, job_id: str, page: int) -> None:
        """0-based ``page`` of the job was computed now (the store's page runs)."""
        ...

    def running(self, job_id: str, recognizer: Any | None) -> None:
        """The job's recognizer (aborted on cancel), or None when the job ended.

        Raises:
            JobCancelled: (with a recognizer) the job was cancelled while it was being claimed.
        """
        ...


@dataclass
class Outcome:
    """How one job's parse ended: ``state`` (done, partial, failed, cancelled), its error and fix
    (the CLI's message), pages done and pages taken from the page cache."""

    state: str
    error: str | None = None
    fix: str | None = None
    done: int = 0
    cached: int = 0


def failed(exc: OcrstackError, job: Job, opts: ParseOptions) -> Outcome:
    """A job failed with ``exc``: its message with server paths replaced, its remedy."""
    return Outcome("failed", _public(exc.message, opts.inputs[0], job.filename, opts.output), exc.remedy)


class _JobParser(Parser):
    """The pipeline's Parser with providers given (reused across jobs) plus per-page bookkeeping."""

    def __init__(self, options: ParseOptions, layout: Any, recognizer: Any, job: Job, hooks: Hooks) -> None:
        super().__init__(options, recognizer=recognizer, layout=layout)
        self.job = job
        self.hooks = hooks
        self.last_page_end = 0.0

    def checkpoint(self) -> None:
        """Stop the page between two stages once the job is cancelled (DELETE): the page in
        flight does not run its remaining stages."""
        if self.hooks.cancelled(self.job.id):
            raise JobCancelled(f"job {self.job.id} was cancelled", "submit it again to parse it")

    def parse_page(self, page: PageImage, paths: Any = None) -> Any:
        self.checkpoint()
        m = self.hooks.metrics
        m.pages_in_flight.inc()
        try:
            result = super().parse_page(page, paths)
        finally:
            m.pages_in_flight.dec()
        self.page_ran(page.index, result)
        return result

    def page_ran(self, index: int, result: Any) -> None:
        """Record one computed page: the store's page runs, stage latencies, the computed count."""
        m = self.hooks.metrics
        self.hooks.page_ran(self.job.id, index)
        for key, seconds in result.timings.items():
            m.stage_seconds.labels(STAGE_NAMES.get(key, key)).observe(seconds)
        m.pages.labels("computed").inc()
        self.last_page_end = time.perf_counter()


class _JobExecutor:
    """``api serve --ray``: the pages run on another executor (:class:`ocrstack.scaleout.RayExecutor`);
    each finished page gets the job's bookkeeping (cancellation, page runs, stage latencies) that
    :meth:`_JobParser.parse_page` does for a local page."""

    def __init__(self, inner: Any, parser: _JobParser) -> None:
        self.inner = inner
        self.job_parser = parser

    def run(self, parser: Any, work: list, page_done: Any) -> None:
        jp = self.job_parser

        def done(w: Any, index: int, outcome: Any) -> None:
            if jp.hooks.cancelled(jp.job.id):
                raise JobCancelled(f"job {jp.job.id} was cancelled", "submit it again to parse it")
            if not isinstance(outcome, BaseException):
                jp.page_ran(index, outcome)
            page_done(w, index, outcome)

        self.inner.run(parser, work, done)


def engines(opts: ParseOptions, cache: dict[tuple, Any]) -> tuple[Any, Any]:
    """``(layout, recognizer)`` for ``opts``: the layout provider and a local recognizer are built
    once per ``cache`` (a worker's: rapidocr/onnxruntime sessions are not shared) and reused by
    what changes their output; an OpenAI-compatible recognizer is built per job (no model, cheap;
    closed by the pipeline)."""
    lkey = ("layout", opts.layout, str(opts.layout_model))
    if lkey not in cache:
        cache[lkey] = layout_registry.create(opts.layout, opts)
    if opts.recognizer == "openai":
        return cache[lkey], recognition_registry.create(opts.recognizer, opts)
    # the runtime changes the recognizer's models and its page-cache key (cache_fields)
    rkey = ("recognizer", opts.recognizer, opts.ocr_runtime)
    if rkey not in cache:
        cache[rkey] = recognition_registry.create(opts.recognizer, opts)
    return cache[lkey], cache[rkey]


def compute(
    job: Job, opts: ParseOptions, cache: dict[tuple, Any], hooks: Hooks, executor: Any | None = None
) -> Outcome:
    """Parse ``job`` with ``opts`` (secrets restored; output dir and ``force`` set) on the engines
    of ``cache``; ``executor``: a page executor (``--ray``), None computes pages here.

    Raises:
        StoreUnavailable: the job database failed under a page record (the job is left running:
            its lease hands it on).
        OSError / sqlite3.OperationalError: the data dir is full (:func:`ocrstack.api.storage.is_full`).
    """
    out = Outcome("done", done=job.pages_total)
    parser: _JobParser | None = None
    summary: RunSummary | None = None
    try:
        layout, recognizer = engines(opts, cache)
        hooks.running(job.id, recognizer)
        parser = _JobParser(opts, layout, ObservedRecognizer(recognizer, hooks.metrics), job, hooks)
        summary = pipeline.run(
            opts,
            progress=False,
            echo=lambda line: log.debug("%s", line),
            parser=parser,
            executor=_JobExecutor(executor, parser) if executor is not None else None,
        )
        for line in summary.lines():
            log.debug("%s", line)
        out.cached = sum(d.cached for d in summary.documents)
        problem = summary.error()  # failed pages or blocks, or a failed validation: written
        if problem is not None:
            out.state, out.error, out.fix = "partial", problem.message, problem.remedy
            out.done = job.pages_total - summary.failed_pages
            hooks.metrics.page_failures.inc(summary.failed_pages)
    except StoreUnavailable:  # not the job's fault: leave it running; its lease hands it on
        raise
    except JobCancelled:
        out.state = "cancelled"
    except OcrstackError as exc:
        out = failed(exc, job, opts)
    except Exception as exc:  # a bug must fail this job, not the worker
        if storage.is_full(exc):
            raise  # not the job's fault: failed by the caller with the reason (storage.Unfinished)
        log.exception("job %s failed", job.id)
        out = Outcome("failed", f"internal error: {type(exc).__name__}", "report this bug")
    finally:
        hooks.running(job.id, None)
    _observe(hooks.metrics, parser, summary, out.cached)
    return out


def _observe(metrics: Any, parser: _JobParser | None, summary: RunSummary | None, cached: int) -> None:
    """Assembly seconds (last computed page to written output), render seconds per written page,
    pages taken from the cache."""
    if parser is not None and parser.last_page_end:
        metrics.stage_seconds.labels("assembly").observe(time.perf_counter() - parser.last_page_end)
        if summary is not None:  # render time per written page (the pipeline adds it to its timings)
            for timings in (t for d in summary.documents for t in d.page_timings):
                if "render" in timings:
                    metrics.stage_seconds.labels("render").observe(timings["render"])
    if cached:
        metrics.pages.labels("cache").inc(cached)


def _public(message: str, path: Path, filename: str, out_dir: Path) -> str:
    """The error message with the server-side input path replaced by the client's file name and
    the job's output dir by ``output`` (issue 25 item 7: no server path in an answer)."""
    return message.replace(str(path), filename).replace(str(out_dir), "output")
