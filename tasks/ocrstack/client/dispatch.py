"""Send chat requests to several servers: load-aware, fault-tolerant (guide 4.1, 8; issues 10, 13).

With ``--max-num-seqs 1`` requests queue, so throughput comes from more instances. One scheduler
thread takes jobs from a shared queue (retried jobs first) and gives each to a server:

* **Routing** (:mod:`ocrstack.client.routing`): among servers whose breaker is closed and that
  have a free slot (``concurrency``, or ``#capacity=N`` on the URL), the lowest expected wait
  ``(others' requests + ours + 1) / capacity`` from the engine's ``/metrics``; a server without
  readable metrics counts only our requests in flight. When the best free server would queue
  the request (wait > 1 service time) and a busy one will be better as soon as a slot frees,
  the job waits for that one.
* **Faults** (:mod:`ocrstack.client.breaker`): a retryable failure (connection error, timeout,
  5xx, 429 -- :mod:`ocrstack.core.retry`) opens the server's breaker for the shared backoff with
  jitter (``Retry-After`` honoured); failures of one burst count once; the server is re-checked
  in the background (``/health`` + a 1-token request) and rejoins when it passes, while the
  others carry on. The job goes back to the front of the queue.
* **Giving up**: a job is failed with :class:`~ocrstack.core.errors.RequestFailed` after
  ``retries`` counted failures of its own (a block that fails while the servers answer others),
  or once it has been waiting longer than its own budget, ``(retries + 1) x timeout`` plus the
  backoffs (``retries x backoff_max``), counted from its first send (a server that dies
  mid-request fails the block after that, issue 25 item 4); queued jobs fail with
  :class:`~ocrstack.core.errors.ServerUnreachable` when no server has answered anything for
  ``progress_timeout`` s (a dead fleet), not after N faults.
* **Deadlines**: ``timeout`` bounds each whole request (:mod:`ocrstack.client.deadline`: a server
  dripping bytes is cut off), and :meth:`Dispatcher.abort` stops the requests in flight at once
  (``DELETE`` of a running API job).
* A 4xx other than 429 fails the job at once with ``ServerRejected`` (never retried, guide 8).
"""

from __future__ import annotations

import collections
import contextlib
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from typing import Any

import httpx

from ocrstack.client import jobs, routing
from ocrstack.client.chat import Completion, RequestAborted, post_chat
from ocrstack.client.deadline import Watch
from ocrstack.client.defaults import (
    BACKOFF_BASE,
    BACKOFF_MAX,
    CONCURRENCY,
    PROGRESS_TIMEOUT,
    REQUEST_TIMEOUT,
    RETRIES,
)
from ocrstack.client.http import base_url, curl_hint, make_client, public_url
from ocrstack.client.jobs import Job, JobGroup, Server, fail
from ocrstack.client.probe import recheck
from ocrstack.core import retry
from ocrstack.core.errors import RequestFailed, ServerRejected, ServerUnreachable, UsageError
from ocrstack.core.retry import Transient

#: Scheduler wake-up period (s): cool-downs, stalls.
TICK = 0.05


class Dispatcher:
    """Send chat requests to several servers (see the module docstring for routing and faults).

    Args:
        urls: server base URLs; ``URL#capacity=N`` sets that server's capacity and slots.
        model: served model name (guide 4.1).
        concurrency: in-flight requests per server without ``#capacity``.
        timeout: seconds per request.
        retries: counted failures of one request before it is given up (``RequestFailed``).
        progress_timeout: seconds with work pending and no answer from any server before queued
            requests fail with ``ServerUnreachable``.
        routing_mode: ``auto`` (read ``/metrics``) or ``inflight`` (count our requests only).
        metrics_interval: seconds between two ``/metrics`` scrapes of one server.
        notice: receives one line when a server leaves or rejoins the rotation (default: stderr).

    Thread-safe; :meth:`submit` returns a Future. Call :meth:`close` when done (or use ``with``).
    Raises:
        UsageError: no URL, ``concurrency`` < 1, ``retries`` < 0, bad ``#capacity``, unknown routing.
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        model: str,
        concurrency: int = CONCURRENCY,
        timeout: float = REQUEST_TIMEOUT,
        retries: int = RETRIES,
        api_key: str | None = None,
        backoff_base: float = BACKOFF_BASE,
        backoff_max: float = BACKOFF_MAX,
        progress_timeout: float = PROGRESS_TIMEOUT,
        routing_mode: str = "auto",
        metrics_interval: float = routing.POLL_INTERVAL,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        if not urls:
            raise UsageError("no server URL given", "pass --server-url http://HOST:PORT (repeatable)")
        # ranges (concurrency >= 1, retries >= 0, a known routing mode) are checked once, where the
        # options are declared (ocrstack.parsing.options)
        self.model = model
        self.retries = retries
        self.timeout = timeout
        #: Seconds from a job's first send after which it fails (issue 25 item 4): every attempt
        #: its whole ``timeout`` plus the longest backoff between two.
        self.budget = (retries + 1) * timeout + retries * backoff_max
        self.progress_timeout = progress_timeout
        self.routing_mode = routing_mode
        self.policy = retry.Policy(
            attempts=retries + 1,
            wait_initial=backoff_base,
            wait_max=backoff_max,
            wait_jitter=backoff_base * 0.25,
        )
        self.retried = 0
        self.given_up = 0
        self._notice = notice or (lambda text: print(f"ocrstack: {text}", file=sys.stderr))
        self._queue: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._stalled = False
        self._last_progress = time.monotonic()
        self._inflight: dict[int, Job] = {}  # id(job) -> job with a request in flight
        self._aborted: str | None = None
        specs: dict[str, int | None] = {}
        for u in urls:
            plain, cap = routing.split_capacity(u)
            specs.setdefault(base_url(plain), cap)

        def client_of(url: str, slots: int) -> httpx.Client:
            return make_client(url, timeout=timeout, api_key=api_key, connections=slots + 1)

        self.servers = [Server(u, cap, concurrency, client_of, self.policy) for u, cap in specs.items()]
        self._by_url = {s.url: s for s in self.servers}
        self._poller: routing.MetricsPoller | None = None
        if routing_mode == "auto":
            self._poller = routing.MetricsPoller(
                [(s.target, lambda s=s: s.inflight) for s in self.servers],
                make_client=lambda u: make_client(
                    u, timeout=routing.POLL_TIMEOUT, api_key=api_key, connections=1
                ),
                interval=metrics_interval,
            )
        self._thread = threading.Thread(target=self._schedule, name="ocr-dispatch", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:  # never shows the API key
        return f"Dispatcher(servers={[s.url for s in self.servers]}, retries={self.retries})"

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, body: dict[str, Any], group: JobGroup | None = None) -> Future[Completion]:
        """Queue one chat request body; the future gives a :class:`Completion` or raises the error."""
        fut: Future[Completion] = Future()
        with self._cond:
            if self._closed:
                fut.set_exception(ServerUnreachable("recognizer already closed", "create a new one"))
                return fut
            if self._stalled and not any(s.breaker.closed for s in self.servers):
                fut.set_exception(self._stall_error())
                return fut
            self._queue.append(Job(body, fut, group))
            self._cond.notify_all()
        return fut

    def mark_down(self, url: str) -> None:
        """Treat ``url`` as failed (its first probe failed): it rejoins after a background check."""
        srv = self._by_url.get(public_url(base_url(routing.split_capacity(url)[0])))
        if srv is not None:
            srv.breaker.trip(time.monotonic())

    def load_mode(self, url: str) -> str:
        """``metrics`` when ``url``'s /metrics was read recently, else ``inflight``."""
        return "metrics" if self._load(self._by_url[public_url(base_url(url))]) is not None else "inflight"

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per server: ``done``, ``failed`` (retryable faults), ``bursts`` (counted), ``sent``,
        ``capacity``, ``state`` (breaker), ``routing`` (``metrics`` or ``inflight``)."""
        return {
            s.url: {
                "done": s.done,
                "failed": s.failed,
                "bursts": s.breaker.bursts,
                "sent": s.sent,
                "capacity": s.capacity,
                "state": s.breaker.state.value,
                "routing": self.load_mode(s.url),
            }
            for s in self.servers
        }

    def fault_note(self) -> str:
        """One line on the run's faults (empty when none): answers, faults and bursts per server;
        requests re-sent and given up."""
        if not any(s.failed for s in self.servers) and not self.given_up:
            return ""
        each = "; ".join(
            f"{s.url}: {s.done} answered, {s.failed} failed ({s.breaker.bursts} burst(s))"
            for s in self.servers
        )
        return f"server faults: {each}; {self.retried} request(s) re-sent, {self.given_up} given up"

    def abort(self, reason: str = "the job was cancelled") -> None:
        """Stop now: the requests in flight are cut off (their sockets shut down) and every
        request fails with :class:`~ocrstack.core.errors.ServerUnreachable` naming ``reason``;
        then :meth:`close`. For a cancelled job whose worker waits on a slow server."""
        with self._cond:
            self._aborted = reason
            watches = [job.watch for job in self._inflight.values() if job.watch is not None]
        for watch in watches:
            watch.abort()
        self.close()

    def close(self) -> None:
        """Stop scheduling (pending jobs fail with ServerUnreachable) and close the HTTP clients."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=2)
        if self._poller is not None:
            self._poller.close()
        with self._cond:
            pending = list(self._queue)
            self._queue.clear()
        for job in pending:
            fail(job, ServerUnreachable("recognizer closed before the request was sent", ""))
        for srv in self.servers:
            srv.pool.shutdown(wait=False, cancel_futures=True)
            srv.client.close()

    # -- scheduling (under self._cond)

    def _load(self, srv: Server) -> routing.Load | None:
        return self._poller.load(srv.target) if self._poller is not None else None

    def _choose(self) -> Server | None:
        usable = [s for s in self.servers if s.breaker.closed]
        free = [s for s in usable if s.inflight < s.slots]
        if not free:
            return None
        loads = {s.url: self._load(s) for s in usable}

        def wait_of(s: Server, own: int) -> float:
            return routing.score(loads[s.url], own, s.capacity)

        best = min(free, key=lambda s: (wait_of(s, s.inflight), s.inflight, s.sent))
        best_wait = wait_of(best, best.inflight)
        if best_wait > 1.0 and any(
            wait_of(s, s.slots - 1) < best_wait for s in usable if s.inflight >= s.slots
        ):
            return None  # the engine would queue it: a busy, less loaded server frees a slot sooner
        return best

    def _schedule(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                for srv in self.servers:
                    if srv.breaker.due(now):
                        srv.pool.submit(self._check, srv)
                busy = self._queue or any(s.inflight for s in self.servers)
                if not busy:
                    self._last_progress = now
                elif now - self._last_progress > self.progress_timeout:
                    self._give_up_all()
                self._give_up_overdue(now)
                if not self._dispatch():
                    self._cond.wait(timeout=TICK)

    def _dispatch(self) -> bool:
        """Send queued jobs while a server is chosen; True when anything was sent."""
        sent = False
        while self._queue:
            job = self._queue[0]
            if job.future.done():
                self._queue.popleft()
                continue
            if job.group is not None and job.group.error is not None:
                self._queue.popleft()
                fail(job, job.group.error)
                continue
            srv = self._choose()
            if srv is None:
                break
            self._queue.popleft()
            srv.inflight += 1
            srv.sent += 1
            job.attempts += 1
            if job.give_up_at is None:
                job.give_up_at = time.monotonic() + self.budget
            job.watch = Watch(self.timeout)
            self._inflight[id(job)] = job
            srv.pool.submit(self._send, srv, job, srv.breaker.generation)
            sent = True
        return sent

    def _stall_error(self) -> ServerUnreachable:
        return jobs.stall_error(self.servers, self.progress_timeout)

    def _give_up_overdue(self, now: float) -> None:
        """Fail queued jobs past their own budget (``give_up_at``) with ``RequestFailed``."""
        for job in [j for j in self._queue if j.give_up_at is not None and now > j.give_up_at]:
            self._queue.remove(job)
            fail(job, self._over_budget(job))

    def _over_budget(self, job: Job) -> RequestFailed:
        self.given_up += 1
        return jobs.over_budget(job, self.budget, self.retries + 1, self.timeout, self.servers)

    def _give_up_all(self) -> None:
        self._stalled = True
        error = self._stall_error()
        while self._queue:
            fail(self._queue.popleft(), error)
        self._last_progress = time.monotonic()

    # -- requests (pool threads)

    def _check(self, srv: Server) -> None:
        """Background check of an open breaker (:func:`ocrstack.client.probe.recheck`)."""
        ok, wait = recheck(srv.client, self.model, self.timeout)
        if ok and srv.breaker.faults > 1:  # back after more than one failed check: say so
            self._notice(f"{srv.url} answers again: back in the rotation")
        with self._cond:
            srv.breaker.probed(ok, time.monotonic(), wait)
            if ok:
                self._stalled = False
            self._cond.notify_all()

    def _send(self, srv: Server, job: Job, generation: int) -> None:
        start = time.monotonic()
        try:
            text, finish, usage = post_chat(srv.client, job.body, self.model, watch=job.watch)
        except RequestAborted:
            self._finished(srv, generation, answered=False, job=job)
            fail(job, ServerUnreachable(f"request stopped: {self._aborted}", "submit the job again"))
        except ServerRejected as exc:
            self._finished(srv, generation, job=job)
            fail(job, exc)
        except Transient as exc:
            self._transient(srv, job, generation, exc)
        except BaseException as exc:  # a bug must not leave a caller waiting forever
            self._finished(srv, generation, answered=False, job=job)
            fail(job, exc)
        else:
            self._finished(srv, generation, job=job)
            done = Completion(text, finish, srv.url, time.monotonic() - start, job.attempts, usage)
            with contextlib.suppress(InvalidStateError):  # the caller cancelled it
                job.future.set_result(done)

    def _finished(self, srv: Server, generation: int, answered: bool = True, job: Job | None = None) -> None:
        with self._cond:
            srv.inflight -= 1
            self._inflight.pop(id(job), None)
            if answered:
                srv.done += 1
                srv.breaker.success(generation)
                self._last_progress = time.monotonic()
                self._stalled = False
            self._cond.notify_all()

    def _transient(self, srv: Server, job: Job, generation: int, exc: Transient) -> None:
        with self._cond:
            srv.inflight -= 1
            self._inflight.pop(id(job), None)
            srv.failed += 1
            job.errors.append(str(exc))
            if srv.breaker.failure(generation, time.monotonic(), exc.retry_after):
                job.strikes += 1
                wait = srv.breaker.cool_until - time.monotonic()
                self._notice(f"{exc}: {srv.url} leaves the rotation, re-checked in {max(wait, 0):.1f} s")
            error: BaseException | None = None
            if self._closed:
                error = ServerUnreachable("recognizer closed while the request was retried", "")
            elif job.give_up_at is not None and time.monotonic() > job.give_up_at:
                error = self._over_budget(job)
            elif job.strikes > self.retries:
                self.given_up += 1
                error = RequestFailed(
                    f"request failed {job.strikes} times while the servers answered others: "
                    f"{' | '.join(job.errors[-3:])}",
                    f"check the server log for this request; {curl_hint(srv.url)}; "
                    "raise --timeout for slow pages; rerun the same command to retry it",
                )
            elif self._stalled and not any(s.breaker.closed for s in self.servers):
                error = self._stall_error()
            else:
                self.retried += 1
                self._queue.appendleft(job)
            self._cond.notify_all()
        if error is not None:
            fail(job, error)
