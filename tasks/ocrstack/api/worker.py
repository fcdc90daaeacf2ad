"""Worker threads: take the oldest queued job, parse it (:func:`ocrstack.api.jobrun.compute`, the
same pipeline as ``ocrstack parse``) and record how it ended (store, result, callback).

``ocrstack api serve`` parses in a child process per worker thread at a lower CPU priority
(:mod:`ocrstack.api.parseproc`, ``--parse-nice``): the API's requests do not wait for the parse
work. With ``--ray`` (the pages run on Ray already) and for a :class:`Worker` made without
``nice``, jobs are parsed in this process. Models are loaded once per worker thread (or its parse
process) and kept; an OpenAI-compatible recognizer is built per job.
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

from ocrstack.api import jobrun, storage
from ocrstack.api import options as api_options
from ocrstack.api.jobrun import JobCancelled, Outcome
from ocrstack.api.jobsecrets import JobSecrets
from ocrstack.api.liveness import reporting
from ocrstack.api.metrics import Metrics
from ocrstack.api.outbox import Outbox
from ocrstack.api.parseproc import ParseProcess
from ocrstack.api.store import Job, StoreUnavailable
from ocrstack.api.stores import Store
from ocrstack.core.errors import OcrstackError
from ocrstack.parsing import outputs
from ocrstack.parsing.options import ParseOptions

log = logging.getLogger("ocrstack.api")
#: Seconds between TTL sweeps (at most; half the TTL when that is shorter).
EXPIRE_EVERY = 30.0
#: The key of a worker thread's parse process in its engine cache.
PROCESS = ("parse process",)


class Worker:
    """``threads`` worker threads over one job store (plus a heartbeat thread when it has leases).

    Args:
        base: the service's default options (``ocrstack api serve`` flags, incl. the recognizer API key).
        executor: makes each job's page executor (``--ray``); None computes pages here.
        webhook_secret: signs the callbacks of jobs that name one (``--webhook-secret``).
        webhook_hosts: the hosts callbacks may go to (``--webhook-host``; checked again at sending).
        nice: parse each thread's jobs in a child process at this CPU priority increment
            (:mod:`ocrstack.api.parseproc`; 0-19); None parses them in this process.
    """

    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        base: ParseOptions,
        threads: int = 1,
        executor: Callable[[], Any] | None = None,
        webhook_secret: str | None = None,
        nice: int | None = None,
        webhook_hosts: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        #: Sends the callbacks owed in the store (:mod:`ocrstack.api.outbox`); None without a
        #: ``webhook_secret`` to sign them (they stay owed for a replica that has one).
        self.outbox = Outbox(store, webhook_secret, metrics, hosts=webhook_hosts) if webhook_secret else None
        #: Makes the page executor of a job (``api serve --ray``); None: pages run in this process.
        self.executor = executor
        self.metrics = metrics
        self.base = base
        self.threads = threads
        self.nice = nice
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._cancel: set[str] = set()
        self.secrets = JobSecrets()
        self._recognizers: dict[str, Any] = {}  # running job -> its recognizer (aborted on cancel)
        self._processes: dict[str, ParseProcess] = {}  # running job -> the parse process running it
        self._parsers: dict[str, ParseProcess] = {}  # worker thread name -> its parse process
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
        if self.outbox is not None:
            self.outbox.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the threads to stop after their current job; wait up to ``timeout`` seconds."""
        self._stop.set()
        self._wake.set()
        if self.outbox is not None:
            self.outbox.stop(timeout)
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
            process = self._processes.get(job_id)
        if recognizer is not None:
            recognizer.abort()
        if process is not None:
            process.cancel(job_id)

    def cancelled(self, job_id: str) -> bool:
        """True after :meth:`cancel` for this job."""
        with self._lock:
            return job_id in self._cancel

    def parse_pids(self) -> list[int]:
        """Process ids of the worker threads' parse processes running now (empty without them)."""
        with self._lock:
            processes = list(self._parsers.values())
        return [p.pid for p in processes if p.alive and p.pid is not None]

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
        try:
            self._jobs(engines)
        finally:
            if PROCESS in engines:
                engines[PROCESS].close()

    def _jobs(self, engines: dict[tuple, Any]) -> None:
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
                log.error("job %s stopped by a full data dir: %s", job.id, exc)
                self.unfinished.add(self.store, job.id)
            finally:
                with self._lock:
                    self._held.discard(job.id)
                self.metrics.jobs_running.dec()

    def _warm(self, engines: dict[tuple, Any]) -> None:
        """Load the default engines (in this thread's parse process, when there is one) before
        the service says it is ready (``GET /ready``); a failure is kept in :attr:`error`."""
        error = None
        try:
            if self.nice is not None and self.executor is None:
                error = self._start_process(engines)
            else:
                self._engines(self.base, engines)
        except OcrstackError as exc:
            error = exc.render()
        except Exception as exc:  # reported by /ready, not a crash
            error = f"{type(exc).__name__}: {exc}"
            log.exception("engines failed to load")
        if error is None:
            self.ready.set()
        else:
            self.error = error
            log.error("engines failed to load: %s", error)

    def _start_process(self, engines: dict[tuple, Any]) -> str | None:
        """Start this thread's parse process (``engines[PROCESS]``); None, or why its engines failed."""
        assert self.nice is not None
        if PROCESS in engines:
            engines[PROCESS].close()
        engines[PROCESS] = process = ParseProcess(self.base, self.nice)
        with self._lock:
            self._parsers[threading.current_thread().name] = process
        error = process.start()
        log.info("worker %s: parse process %s at nice +%d", self.store.boot, process.pid, self.nice)
        return error

    def _engines(self, opts: ParseOptions, engines: dict[tuple, Any]) -> tuple[Any, Any]:
        """:func:`ocrstack.api.jobrun.engines` (reused per worker thread)."""
        return jobrun.engines(opts, engines)

    def job_options(self, job: Job) -> ParseOptions:
        """The job's :class:`ParseOptions`: its stored fields on the service defaults, its own dirs."""
        opts = api_options.from_json(job.options, self.base)
        return dataclasses.replace(
            opts, inputs=(self.store.data_dir / job.input,), output=self.store.out_dir(job.id), force=True
        )

    # -- the hooks of jobrun.compute (in this process, or relayed from the parse process)

    def page_ran(self, job_id: str, page: int) -> None:
        """Record that 0-based ``page`` of ``job_id`` was computed by this replica now."""
        self.store.page_ran(job_id, page)

    def running(self, job_id: str, recognizer: Any | None) -> None:
        """Keep the running job's recognizer (aborted on cancel); None: the job ended.

        Raises:
            JobCancelled: the job was cancelled while it was being claimed.
        """
        with self._lock:
            if recognizer is None:
                self._recognizers.pop(job_id, None)
                return
            self._recognizers[job_id] = recognizer
            if job_id in self._cancel:
                raise JobCancelled(f"job {job_id} was cancelled", "submit it again to parse it")

    # -- one job

    def _run(self, job: Job, engines: dict[tuple, Any]) -> None:
        started = time.perf_counter()
        opts = self.job_options(job)
        try:
            opts = self.secrets.restore(job.options, opts)
        except OcrstackError as exc:  # the secrets were kept by a process that is gone
            outcome = jobrun.failed(exc, job, opts)
        else:
            outcome = self._compute(job, opts, engines)
        self._record(job, outcome, started)

    def _compute(self, job: Job, opts: ParseOptions, engines: dict[tuple, Any]) -> Outcome:
        """The job's parse: in this thread's parse process when it has one, else here."""
        if PROCESS not in engines:
            return jobrun.compute(job, opts, engines, self, self.executor() if self.executor else None)
        process = engines[PROCESS]
        if not process.alive:  # it died with an earlier job (or never loaded its engines)
            error = self._start_process(engines)
            if error is not None:
                return Outcome("failed", error, "fix the engine setup and restart the service")
            process = engines[PROCESS]
        with self._lock:
            self._processes[job.id] = process
        try:
            return process.run(job, opts, self)
        finally:
            with self._lock:
                self._processes.pop(job.id, None)

    def _record(self, job: Job, out: Outcome, started: float) -> None:
        """Record how the job ended: cancelled (files removed), taken over (nothing), or finished
        here (result published, state stored once with its callback owed, the senders woken)."""
        with self._lock:
            was_cancelled = job.id in self._cancel
            self._cancel.discard(job.id)
            lost = job.id in self._lost
            self._lost.discard(job.id)
        if lost:  # another replica holds it now and writes its result
            return
        if was_cancelled or out.state == "cancelled":
            shutil.rmtree(self.store.job_dir(job.id), ignore_errors=True)
            self.metrics.jobs_finished.labels("cancelled").inc()
            return
        if out.state in ("done", "partial"):
            _publish_source(self.store.out_dir(job.id), job.filename)
        if not self.store.finish(
            job.id, out.state, done=out.done, cached=out.cached, error=out.error, fix=out.fix
        ):
            log.warning("job %s was finished or taken over elsewhere; not recorded here", job.id)
            return
        self.metrics.jobs_finished.labels(out.state).inc()
        log.info("job %s %s in %.2f s", job.id, out.state, time.perf_counter() - started)
        if job.callback and self.outbox is not None:  # owed since finish(): any replica may send it
            self.outbox.wake()


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
