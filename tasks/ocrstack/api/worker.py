"""Worker threads: take the oldest queued job and run :func:`ocrstack.parsing.run.pipeline.run` on it.

The job runs exactly like ``ocrstack parse INPUT -o OUT --force`` with the job's options (same
function, same outputs, same page cache), so a job rerun after a crash reuses every finished
page. Models are loaded once per worker thread and kept (the embedded layout provider and
rapidocr); an OpenAI-compatible recognizer is built per job (no model, cheap) and closed by the
pipeline. Hooks used here, all public to the pipeline: ``Parser.parse_page`` (overridden to count
pages, observe stage latencies and honour cancellation), the recognizer's ``probe``/``close`` and
its ``http_clients``/``stats`` (per-server metrics); the job's state, error and page counts come
from the run's returned outcome (:class:`ocrstack.parsing.run.outcomes.RunSummary`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ocrstack.api import options as api_options
from ocrstack.api import storage, webhooks
from ocrstack.api.jobsecrets import JobSecrets
from ocrstack.api.liveness import reporting
from ocrstack.api.metrics import Metrics
from ocrstack.api.observed import ObservedRecognizer
from ocrstack.api.store import Job, StoreUnavailable
from ocrstack.api.stores import Store
from ocrstack.core.errors import OcrstackError, UsageError
from ocrstack.parsing import layout as layout_registry
from ocrstack.parsing import outputs
from ocrstack.parsing import recognition as recognition_registry
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import pipeline
from ocrstack.parsing.run.outcomes import RunSummary
from ocrstack.parsing.stages import Parser
from ocrstack.parsing.types import PageImage

log = logging.getLogger("ocrstack.api")
#: Page timing keys (``PageResult.timings``) -> metric stage label; other keys are used as they are.
STAGE_NAMES = {"recognize": "recognition", "recognise": "recognition"}
#: Seconds between TTL sweeps (at most; half the TTL when that is shorter).
EXPIRE_EVERY = 30.0


class JobCancelled(UsageError):
    """Raised inside a running job after ``DELETE /v1/jobs/{id}`` (a fatal error: the run stops)."""


class _JobParser(Parser):
    """The pipeline's Parser with providers given (reused across jobs) plus per-page bookkeeping."""

    def __init__(self, options: ParseOptions, layout: Any, recognizer: Any, job: Job, worker: Worker) -> None:
        super().__init__(options, recognizer=recognizer, layout=layout)
        self.job = job
        self.worker = worker
        self.last_page_end = 0.0

    def checkpoint(self) -> None:
        """Stop the page between two stages once the job is cancelled (DELETE): the page in
        flight does not run its remaining stages."""
        if self.worker.cancelled(self.job.id):
            raise JobCancelled(f"job {self.job.id} was cancelled", "submit it again to parse it")

    def parse_page(self, page: PageImage, paths: Any = None) -> Any:
        self.checkpoint()
        m = self.worker.metrics
        m.pages_in_flight.inc()
        try:
            result = super().parse_page(page, paths)
        finally:
            m.pages_in_flight.dec()
        self.page_ran(page.index, result)
        return result

    def page_ran(self, index: int, result: Any) -> None:
        """Record one computed page: the store's page runs, stage latencies, the computed count."""
        m = self.worker.metrics
        self.worker.store.page_ran(self.job.id, index)
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
            if jp.worker.cancelled(jp.job.id):
                raise JobCancelled(f"job {jp.job.id} was cancelled", "submit it again to parse it")
            if not isinstance(outcome, BaseException):
                jp.page_ran(index, outcome)
            page_done(w, index, outcome)

        self.inner.run(parser, work, done)


class Worker:
    """``threads`` worker threads over one job store (plus a heartbeat thread when it has leases).

    Args:
        base: the service's default options (``ocrstack api serve`` flags, incl. the recognizer API key).
        executor: makes each job's page executor (``--ray``); None computes pages in this process.
        webhook_secret: signs the callbacks of jobs that name one (``--webhook-secret``).
    """

    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        base: ParseOptions,
        threads: int = 1,
        executor: Callable[[], Any] | None = None,
        webhook_secret: str | None = None,
    ) -> None:
        self.store = store
        #: Signs job callbacks (:mod:`ocrstack.api.webhooks`); None: callbacks are not sent.
        self.webhook_secret = webhook_secret
        #: Makes the page executor of a job (``api serve --ray``); None: pages run in this process.
        self.executor = executor
        self.metrics = metrics
        self.base = base
        self.threads = threads
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._cancel: set[str] = set()
        self.secrets = JobSecrets()
        self._recognizers: dict[str, Any] = {}  # running job -> its recognizer (aborted on cancel)
        self._held: set[str] = set()  # jobs running here (their leases are renewed)
        self._lost: set[str] = set()  # leases another replica took over: stop, keep the files
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._last_expire = 0.0
        self.ready = threading.Event()
        self.error: str | None = None
        self.stopped: dict[str, str] = {}  # thread name -> why it ended (GET /ready: 503)
        self.unfinished = storage.Unfinished()  # jobs a full data dir stopped: failed when it can

    # -- control

    def start(self) -> None:
        """Requeue jobs a killed server left running, then start the threads."""
        requeued = self.store.recover()
        log.info("worker %s: %d thread(s)", self.store.boot, self.threads)  # page_runs.boot, lease owner
        if requeued:
            log.info("requeued %d job(s) left running by the previous server", requeued)
        for i in range(self.threads):
            t = threading.Thread(
                target=reporting(self._loop, self.stopped), name=f"ocrstack-job-{i}", daemon=True
            )
            t.start()
            self._threads.append(t)
        if self.store.lease:
            t = threading.Thread(
                target=reporting(self._beat, self.stopped), name="ocrstack-lease", daemon=True
            )
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the threads to stop after their current job; wait up to ``timeout`` seconds."""
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout)

    def wake(self) -> None:
        """A job was queued: stop waiting."""
        self._wake.set()

    def cancel(self, job_id: str) -> None:
        """Make the running job ``job_id`` stop: its recognizer's requests in flight are cut off
        (``Recognizer.abort``: a worker blocked on a slow server returns at once, issue 25 item 4)
        and no further page starts."""
        with self._lock:
            self._cancel.add(job_id)
            recognizer = self._recognizers.get(job_id)
        if recognizer is not None:
            recognizer.abort()

    def cancelled(self, job_id: str) -> bool:
        """True after :meth:`cancel` for this job."""
        with self._lock:
            return job_id in self._cancel

    # -- loop

    def _beat(self) -> None:
        """Renew the lease of every job running here every ``lease/3`` s; stop those cancelled or lost."""
        assert self.store.lease
        while not self._stop.wait(self.store.lease / 3):
            with self._lock:
                held = list(self._held)
            for job_id in held:
                try:
                    state = self.store.heartbeat(job_id)
                except StoreUnavailable as exc:
                    log.warning("lease of job %s not renewed: %s", job_id, exc.message)
                    continue
                if state != "held":
                    log.warning("job %s was %s elsewhere; stopping it here", job_id, state)
                    with self._lock:
                        if state == "lost":
                            self._lost.add(job_id)
                    self.cancel(job_id)

    def _loop(self) -> None:
        engines: dict[tuple, Any] = {}  # per thread: rapidocr/onnxruntime sessions are not shared
        self._warm(engines)
        while not self._stop.is_set():
            now = time.time()
            try:
                if now - self._last_expire > min(EXPIRE_EVERY, max(self.store.ttl / 2, 0.5)):
                    self._last_expire = now
                    for job_id in self.store.expire(now):
                        log.info("job %s expired and was deleted", job_id)
                self.unfinished.retry(self.store)
                job = self.store.claim()
            except StoreUnavailable as exc:
                log.error("%s; retrying", exc.message)
                job = None
            except (OSError, sqlite3.OperationalError) as exc:
                if not storage.is_full(exc):
                    raise
                log.error("the data dir is full; waiting for space")
                job = None
            if job is None:
                self._wake.wait(0.5)
                self._wake.clear()
                continue
            self.metrics.jobs_running.inc()
            with self._lock:
                self._held.add(job.id)
            try:
                self._run(job, engines)
            except StoreUnavailable as exc:  # the lease runs out; another claim resumes the job
                log.error("job %s left unfinished: %s", job.id, exc.message)
            except (OSError, sqlite3.OperationalError) as exc:  # the data dir is full: fail it, go on
                if not storage.is_full(exc):
                    raise
                self.unfinished.add(self.store, job.id)
            finally:
                with self._lock:
                    self._held.discard(job.id)
                self.metrics.jobs_running.dec()

    def _warm(self, engines: dict[tuple, Any]) -> None:
        """Load the default engines before the service says it is ready (``GET /ready``)."""
        try:
            self._engines(self.base, engines)
            self.ready.set()
        except OcrstackError as exc:
            self.error = exc.render()
            log.error("engines failed to load: %s", self.error)
        except Exception as exc:  # reported by /ready, not a crash
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("engines failed to load")

    def _engines(self, opts: ParseOptions, engines: dict[tuple, Any]) -> tuple[Any, Any]:
        lkey = ("layout", opts.layout, str(opts.layout_model))
        if lkey not in engines:
            engines[lkey] = layout_registry.create(opts.layout, opts)
        if opts.recognizer == "openai":
            recognizer = recognition_registry.create(opts.recognizer, opts)
        else:
            # the runtime changes the recognizer's models and its page-cache key (cache_fields)
            rkey = ("recognizer", opts.recognizer, opts.ocr_runtime)
            if rkey not in engines:
                engines[rkey] = recognition_registry.create(opts.recognizer, opts)
            recognizer = engines[rkey]
        return engines[lkey], recognizer

    def job_options(self, job: Job) -> ParseOptions:
        """The job's :class:`ParseOptions`: its stored fields on the service defaults, its own dirs."""
        opts = api_options.from_json(job.options, self.base)
        return dataclasses.replace(
            opts, inputs=(self.store.data_dir / job.input,), output=self.store.out_dir(job.id), force=True
        )

    def _run(self, job: Job, engines: dict[tuple, Any]) -> None:
        opts = self.job_options(job)
        state, error, fix, done, cached = "done", None, None, job.pages_total, 0
        parser: _JobParser | None = None
        summary: RunSummary | None = None
        started = time.perf_counter()
        try:
            opts = self.secrets.restore(job.options, opts)
            layout, recognizer = self._engines(opts, engines)
            with self._lock:
                self._recognizers[job.id] = recognizer
                if job.id in self._cancel:  # cancelled while it was being claimed
                    raise JobCancelled(f"job {job.id} was cancelled", "submit it again to parse it")
            parser = _JobParser(opts, layout, ObservedRecognizer(recognizer, self.metrics), job, self)
            executor = _JobExecutor(self.executor(), parser) if self.executor else None
            summary = pipeline.run(
                opts,
                progress=False,
                echo=lambda line: log.debug("%s", line),
                parser=parser,
                executor=executor,
            )
            for line in summary.lines():
                log.debug("%s", line)
            cached = sum(d.cached for d in summary.documents)
            problem = summary.error()  # failed pages or blocks, or a failed validation: written
            if problem is not None:
                state, error, fix = "partial", problem.message, problem.remedy
                done = job.pages_total - summary.failed_pages
                self.metrics.page_failures.inc(summary.failed_pages)
        except StoreUnavailable:  # not the job's fault: leave it running; its lease hands it on
            raise
        except JobCancelled:
            state = "cancelled"
        except OcrstackError as exc:
            state, error, fix, done = (
                "failed",
                _public(exc.message, opts.inputs[0], job.filename, opts.output),
                exc.remedy,
                0,
            )
        except Exception as exc:  # a bug must fail this job, not the worker
            if storage.is_full(exc):
                raise  # not the job's fault: failed by the caller with the reason (storage.Unfinished)
            log.exception("job %s failed", job.id)
            state, error, fix, done = "failed", f"internal error: {type(exc).__name__}", "report this bug", 0
        if parser is not None and parser.last_page_end:
            self.metrics.stage_seconds.labels("assembly").observe(time.perf_counter() - parser.last_page_end)
            if summary is not None:  # render time per written page (the pipeline adds it to its timings)
                for timings in (t for d in summary.documents for t in d.page_timings):
                    if "render" in timings:
                        self.metrics.stage_seconds.labels("render").observe(timings["render"])
        if cached:
            self.metrics.pages.labels("cache").inc(cached)
        with self._lock:
            self._recognizers.pop(job.id, None)
            was_cancelled = job.id in self._cancel
            self._cancel.discard(job.id)
            lost = job.id in self._lost
            self._lost.discard(job.id)
        if lost:  # another replica holds it now and writes its result
            return
        if was_cancelled or state == "cancelled":
            shutil.rmtree(self.store.job_dir(job.id), ignore_errors=True)
            self.metrics.jobs_finished.labels("cancelled").inc()
            return
        if state in ("done", "partial"):
            _publish_source(self.store.out_dir(job.id), job.filename)
        if not self.store.finish(job.id, state, done=done, cached=cached, error=error, fix=fix):
            log.warning("job %s was finished or taken over elsewhere; not recorded here", job.id)
            return
        self.metrics.jobs_finished.labels(state).inc()
        log.info("job %s %s in %.2f s", job.id, state, time.perf_counter() - started)
        if job.callback and self.webhook_secret:  # finished here, once: so its callback goes from here
            args = (self.store, job.id, self.webhook_secret)
            threading.Thread(target=webhooks.notify, args=args, name="ocrstack-webhook", daemon=True).start()


def _publish_source(out_dir: Path, filename: str) -> None:
    """Name the input in the job's blocks.json by the client's file name, and each model file by
    its name: the server-side upload path (data dir, job id) and the server's install paths (a
    venv's model dir) are nobody's business outside this service (review finding; issue 25 item 7)."""
    for blocks in out_dir.glob("*.blocks.json"):
        try:
            data = json.loads(blocks.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "source" in data:
            data["source"] = filename
            model = data.get("model")
            for key, value in model.items() if isinstance(model, dict) else ():
                if isinstance(value, str) and Path(value).is_absolute():
                    model[key] = Path(value).name
            outputs.atomic_write_json(blocks, data)


def _public(message: str, path: Path, filename: str, out_dir: Path) -> str:
    """The error message with the server-side input path replaced by the client's file name and
    the job's output dir by ``output`` (issue 25 item 7: no server path in an answer)."""
    return message.replace(str(path), filename).replace(str(out_dir), "output")
