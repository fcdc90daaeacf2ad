"""The parse process of a worker thread: ``ocrstack api serve`` computes its jobs in a child
process at a lower CPU priority (``--parse-nice``), so that API requests never wait behind the
parse work -- neither for the GIL (rendering, encoding and assembly are Python in the same
interpreter) nor for a CPU (the kernel runs the API's threads first when both want one).

Measured before (issue 23 fault table, ``ocrstack api replicas``): with the parse work in the API's
process a status request's own work took under a millisecond while the request took tens; on a
loaded machine the p99 missed 100 ms with 2 and 3 replicas.

:class:`ParseProcess` is the parent's handle (one per worker thread, started by it: the child is
killed when that thread or the whole service dies, ``PR_SET_PDEATHSIG``, and ends at the pipe's
end elsewhere). Messages, pickled over one :func:`multiprocessing.Pipe` (secrets stay in memory):

* parent -> child: ``("run", job, options, cancelled)``, ``("cancel", job_id)``, ``("stop",)``;
* child -> parent: ``("ready",)`` or ``("error", text)`` once the engines are loaded; per job
  ``("page", job_id, index)`` (the parent records the page run), ``("metric", name, labels,
  method, value)`` (replayed on the service's :class:`~ocrstack.api.metrics.Metrics`), then
  ``("end", job_id, outcome)`` or ``("full", job_id, message)`` (the data dir is full).

The job's parse itself is :func:`ocrstack.api.jobrun.compute`, the same code the service runs
in-process with ``--ray``.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import multiprocessing
import os
import queue
import signal
import threading
from typing import Any

from ocrstack.api import jobrun, storage
from ocrstack.api.jobrun import Outcome
from ocrstack.api.store import Job
from ocrstack.core.errors import OcrstackError
from ocrstack.parsing.options import ParseOptions

log = logging.getLogger("ocrstack.api")
#: The metric calls a child may relay (:class:`MetricsRelay`).
RELAYED = frozenset({"inc", "dec", "observe"})
#: ``prctl`` option: the signal a process gets when the thread that started it ends (linux/prctl.h).
PR_SET_PDEATHSIG = 1


class ParseProcess:
    """The parent's handle of one parse process (``nice``: the child's CPU priority increment)."""

    def __init__(self, base: ParseOptions, nice: int) -> None:
        self.base, self.nice = base, nice
        self._conn: Any = None
        self._proc: Any = None
        self._send_lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The child's process id (None before :meth:`start`)."""
        return None if self._proc is None else self._proc.pid

    @property
    def alive(self) -> bool:
        """The child is running."""
        return self._proc is not None and self._proc.is_alive()

    def start(self) -> str | None:
        """Start the child and wait until its engines are loaded; None, or why they failed."""
        ctx = multiprocessing.get_context("spawn")  # no fork of a threaded server
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_main, args=(child, self.base, self.nice, os.getpid()), name="ocrstack-parse", daemon=True
        )
        self._proc.start()
        child.close()
        try:
            msg = self._conn.recv()
        except (EOFError, OSError):
            self._proc.join(5)
            return f"the parse process exited with code {self._proc.exitcode} while loading the engines"
        return None if msg[0] == "ready" else str(msg[1])

    def run(self, job: Job, opts: ParseOptions, worker: Any) -> Outcome:
        """Parse ``job`` in the child; relay its page runs and metrics to ``worker`` (its
        ``page_ran`` and ``metrics``) until it ends.

        The pipe stays in step with the child whatever happens here: when recording a page run
        fails, the child's job is cancelled and its messages are read up to its end before the
        error is raised, and a message of another job (none, unless a bug) is dropped; else the
        next job would read this one's end as its own.

        Raises:
            StoreUnavailable: recording a page run failed (the child's job was cancelled first).
            OSError / sqlite3.OperationalError: the data dir is full (the child said so, or
                recording a page run said so; the child's job was cancelled first).
        """
        kept: BaseException | None = None  # the first error of a page record, raised at the end
        try:
            self._send(("run", job, opts, worker.cancelled(job.id)))
        except (OSError, ValueError):  # it died since the worker looked: the read below says so
            pass
        while True:
            try:
                msg = self._conn.recv()
            except (EOFError, OSError):
                self._proc.join(5)
                code = self._proc.exitcode
                log.error("job %s: the parse process exited with code %s", job.id, code)
                error = f"internal error: the parse process exited ({code})"
                return Outcome("failed", error, "report this bug")
            kind = msg[0]
            if kind == "metric":
                _replay(worker.metrics, *msg[1:])
            elif msg[1] != job.id:
                log.error("job %s: dropped a %r message of job %s", job.id, kind, msg[1])
            elif kind == "page":
                try:
                    worker.page_ran(msg[1], msg[2])
                except Exception as exc:  # StoreUnavailable, a full disk: the child stops first
                    if kept is None:
                        kept = exc
                        self.cancel(job.id)
            elif kind == "full":
                raise kept or OSError(errno.ENOSPC, msg[2])
            elif kind == "end":
                if kept is not None:
                    raise kept
                return msg[2]

    def cancel(self, job_id: str) -> None:
        """Cancel the job in the child (between two stages; its recognizer's requests are cut off)."""
        try:
            self._send(("cancel", job_id))
        except (OSError, ValueError):  # the child is gone: nothing runs there
            pass

    def close(self, timeout: float = 5.0) -> None:
        """Ask the child to stop after its job; kill it after ``timeout`` seconds."""
        if self._proc is None:
            return
        try:
            self._send(("stop",))
        except (OSError, ValueError):
            pass
        self._proc.join(timeout)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout)
        self._conn.close()

    def _send(self, msg: tuple) -> None:
        with self._send_lock:
            self._conn.send(msg)


def _replay(metrics: Any, name: str, labels: tuple, method: str, value: float) -> None:
    """Apply one relayed metric call to the service's metrics."""
    if method not in RELAYED or name.startswith("_"):
        raise ValueError(f"not a relayed metric call: {name}.{method}")
    metric = getattr(metrics, name)
    getattr(metric.labels(*labels) if labels else metric, method)(value)


class MetricsRelay:
    """The child's stand-in for :class:`~ocrstack.api.metrics.Metrics`: ``relay.NAME[.labels(...)]
    .inc/dec/observe(v)`` is sent to the parent, which applies it to the real metric."""

    def __init__(self, send: Any, name: str = "", labels: tuple = ()) -> None:
        self._send, self._name, self._labels = send, name, labels

    def __getattr__(self, name: str) -> MetricsRelay:
        if name.startswith("_") or self._name:
            raise AttributeError(name)
        return MetricsRelay(self._send, name)

    def labels(self, *values: str) -> MetricsRelay:
        """The metric with these label values."""
        return MetricsRelay(self._send, self._name, values)

    def inc(self, amount: float = 1.0) -> None:
        """Counter/gauge ``inc`` in the parent."""
        self._send(("metric", self._name, self._labels, "inc", amount))

    def dec(self, amount: float = 1.0) -> None:
        """Gauge ``dec`` in the parent."""
        self._send(("metric", self._name, self._labels, "dec", amount))

    def observe(self, value: float) -> None:
        """Histogram ``observe`` in the parent (seconds, as the metric's unit)."""
        self._send(("metric", self._name, self._labels, "observe", value))


class _Child:
    """The child's :class:`ocrstack.api.jobrun.Hooks`: page runs and metrics go to the parent."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.metrics = MetricsRelay(self.send)
        self.cancel: set[str] = set()
        self.recognizers: dict[str, Any] = {}

    def send(self, msg: tuple) -> None:
        with self.lock:
            self.conn.send(msg)

    def cancelled(self, job_id: str) -> bool:
        with self.lock:
            return job_id in self.cancel

    def page_ran(self, job_id: str, page: int) -> None:
        self.send(("page", job_id, page))

    def running(self, job_id: str, recognizer: Any | None) -> None:
        with self.lock:
            if recognizer is None:
                self.recognizers.pop(job_id, None)
                return
            self.recognizers[job_id] = recognizer
            if job_id in self.cancel:
                raise jobrun.JobCancelled(f"job {job_id} was cancelled", "submit it again to parse it")

    def cancel_job(self, job_id: str) -> None:
        with self.lock:
            self.cancel.add(job_id)
            recognizer = self.recognizers.get(job_id)
        if recognizer is not None:
            recognizer.abort()


def _die_with_parent(parent: int) -> None:
    """SIGKILL this process when the thread that started it ends (Linux); exit if it is gone."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no prctl: the reader ends the process at the pipe's end
        pass
    if os.getppid() != parent:
        os._exit(0)


def _main(conn: Any, base: ParseOptions, nice: int, parent: int) -> None:
    """The child: lower its priority, load the engines, then run the jobs it is sent."""
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the parent decides
    os.nice(nice)
    # as ocrstack.api.server logs; httpx logs every request's full URL at INFO (issue 25 item 7)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s parse: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    hooks, cache = _Child(conn), {}
    try:
        jobrun.engines(base, cache)
    except OcrstackError as exc:
        hooks.send(("error", exc.render()))
        return
    except Exception as exc:  # reported by /ready, not a crash
        log.exception("engines failed to load")
        hooks.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    hooks.send(("ready",))
    jobs: queue.Queue = queue.Queue()

    def read() -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                os._exit(0)  # the parent is gone
            if msg[0] == "cancel":
                hooks.cancel_job(msg[1])
            elif msg[0] == "run":
                if msg[3]:
                    hooks.cancel_job(msg[1].id)
                jobs.put(msg[1:3])
            else:
                jobs.put(None)
                return

    threading.Thread(target=read, name="ocrstack-parse-reader", daemon=True).start()
    while (item := jobs.get()) is not None:
        job, opts = item
        try:
            hooks.send(("end", job.id, jobrun.compute(job, opts, cache, hooks)))
        except Exception as exc:
            if not storage.is_full(exc):
                raise
            hooks.send(("full", job.id, getattr(exc, "strerror", None) or str(exc)))
        finally:
            with hooks.lock:
                hooks.cancel.discard(job.id)
