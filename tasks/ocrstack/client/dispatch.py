"""Send chat requests to several servers (guide 4.1, guide 8, issue 3).

With ``--max-num-seqs 1`` requests queue, so throughput comes from more instances: each
server has its own pool of ``concurrency`` worker threads pulling from one shared queue, so
a slow server simply takes fewer jobs and a dead one takes none. A failing server cools
down (the shared backoff of :class:`ocrstack.core.retry.Policy`; a 429's ``Retry-After``
when given) and is re-checked with ``/health`` before it takes work again, while its jobs
go back to the queue for the others. What is retryable is :mod:`ocrstack.core.retry`'s rule;
a 4xx other than 429 fails the job at once.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import httpx

from ocrstack.client.chat import Completion, post_chat
from ocrstack.client.http import base_url, curl_hint, make_client, short_timeout
from ocrstack.core import retry
from ocrstack.core.errors import ServerRejected, ServerUnreachable, UsageError
from ocrstack.core.retry import Transient

#: Backoff: first retry after BACKOFF_BASE s, doubling, capped at BACKOFF_MAX s
#: (plus up to 25 % of BACKOFF_BASE of jitter).
BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0


class JobGroup:
    """Jobs that belong together (one page); cancelling fails the not-yet-sent ones at once."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def cancel(self, error: BaseException) -> None:
        """Fail every job of this group that has not been sent yet with ``error``."""
        if self.error is None:
            self.error = error


@dataclass
class _Job:
    body: dict[str, Any]
    future: Future[Completion]
    group: JobGroup | None
    attempts: int = 0
    errors: list[str] = field(default_factory=list)


class _Server:
    def __init__(self, url: str, client: httpx.Client) -> None:
        self.url = url
        self.client = client
        self.lock = threading.Lock()
        self.failures = 0  # consecutive
        self.cool_until = 0.0
        self.checking = False
        self.verified = False  # half-open: /health passed after a fault, the next request decides
        self.done = 0
        self.failed = 0


class Dispatcher:
    """Send chat requests to several servers, ``concurrency`` in flight per server.

    One shared FIFO queue; each server runs ``concurrency`` worker threads that
    take the next job only while the server is healthy. On a retryable fault the
    server cools down for ``min(backoff_base * 2**(n-1) + jitter, backoff_max)`` s (n =
    consecutive faults), is re-checked with ``/health`` before taking work again,
    and the job goes back to the queue (any server may take it) until it has
    been tried ``retries + 1`` times. When every server has failed more than
    ``retries`` times in a row, queued jobs fail at once with
    :class:`ServerUnreachable` instead of waiting forever. 4xx answers fail the
    job at once with :class:`ServerRejected`.

    Thread-safe; :meth:`submit` returns a :class:`concurrent.futures.Future`.
    Call :meth:`close` when done (or use ``with``).
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        model: str,
        concurrency: int = 4,
        timeout: float = 600.0,
        retries: int = 3,
        api_key: str | None = None,
        backoff_base: float = BACKOFF_BASE,
        backoff_max: float = BACKOFF_MAX,
    ) -> None:
        if not urls:
            raise UsageError("no server URL given", "pass --server-url http://HOST:PORT (repeatable)")
        if concurrency < 1:
            raise UsageError(f"--concurrency must be >= 1, got {concurrency}", "use --concurrency 1 or more")
        if retries < 0:
            raise UsageError(f"--retries must be >= 0, got {retries}", "use --retries 0 or more")
        self.model = model
        self.retries = retries
        self.timeout = timeout
        self.policy = retry.Policy(
            attempts=retries + 1,
            wait_initial=backoff_base,
            wait_max=backoff_max,
            wait_jitter=backoff_base * 0.25,
        )
        self._queue: queue.Queue[_Job] = queue.Queue()
        self._closed = threading.Event()
        self.servers = [
            _Server(base_url(u), make_client(u, timeout=timeout, api_key=api_key, connections=concurrency))
            for u in dict.fromkeys(urls)
        ]
        self._threads = [
            threading.Thread(target=self._work, args=(srv,), name=f"ocr-{srv.url}-{i}", daemon=True)
            for srv in self.servers
            for i in range(concurrency)
        ]
        for t in self._threads:
            t.start()

    def __repr__(self) -> str:  # never shows the API key
        return f"Dispatcher(servers={[s.url for s in self.servers]}, retries={self.retries})"

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, body: dict[str, Any], group: JobGroup | None = None) -> Future[Completion]:
        """Queue one chat request body; the future gives a :class:`Completion` or raises the error."""
        fut: Future[Completion] = Future()
        if self._closed.is_set():
            fut.set_exception(ServerUnreachable("recognizer already closed", "create a new one"))
            return fut
        self._queue.put(_Job(body, fut, group))
        return fut

    def mark_down(self, url: str) -> None:
        """Treat ``url`` as failed (e.g. its probe failed): it cools down and is re-checked before use."""
        for srv in self.servers:
            if srv.url == base_url(url):
                self._fault(srv)

    def stats(self) -> dict[str, dict[str, int]]:
        """``{url: {"done": n, "failed": n}}``: requests answered / faults per server."""
        return {s.url: {"done": s.done, "failed": s.failed} for s in self.servers}

    def close(self) -> None:
        """Stop the workers (pending jobs fail with ServerUnreachable) and close the HTTP clients."""
        self._closed.set()
        for t in self._threads:
            t.join(timeout=2)
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if not job.future.done():
                job.future.set_exception(
                    ServerUnreachable("recognizer closed before the request was sent", "")
                )
        for srv in self.servers:
            srv.client.close()

    # -- internals

    def _fault(self, srv: _Server, retry_after: float | None = None) -> None:
        """Count a fault; the server cools down for the policy's backoff (or the 429's Retry-After)."""
        with srv.lock:
            srv.failures += 1
            srv.failed += 1
            srv.verified = False
            srv.cool_until = time.monotonic() + self.policy.delay(srv.failures, retry_after)

    def _all_down(self) -> bool:
        return all(s.failures > self.retries and not s.verified for s in self.servers)

    def _ready(self, srv: _Server) -> bool:
        """Wait out a cool-down; then one worker re-checks /health. True when the server may take work."""
        with srv.lock:
            if srv.failures == 0 or srv.verified:
                return True
            wait = srv.cool_until - time.monotonic()
            if wait <= 0 and not srv.checking:
                srv.checking = True
                check = True
            else:
                check = False
        if not check:
            self._closed.wait(min(max(wait, 0.01), 0.2))
            return False
        try:
            r = srv.client.get("/health", timeout=short_timeout(self.timeout))
            alive = r.status_code in (200, 404)
        except httpx.HTTPError:
            alive = False
        with srv.lock:
            srv.checking = False
            if alive:
                srv.verified = True  # half-open: the next request decides; failures reset on success
                return True
        self._fault(srv)
        return False

    def _fail_all_queued(self) -> None:
        errors = "; ".join(f"{s.url}: {s.failures} faults in a row" for s in self.servers)
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if not job.future.done():
                job.future.set_exception(
                    ServerUnreachable(
                        f"every server failed repeatedly ({errors}); "
                        f"last errors: {' | '.join(job.errors[-2:])}",
                        f"check the servers: {'; '.join(curl_hint(s.url) for s in self.servers)}",
                    )
                )

    def _work(self, srv: _Server) -> None:
        while not self._closed.is_set():
            if self._all_down():
                self._fail_all_queued()
            if not self._ready(srv):
                continue
            try:
                job = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if job.future.done():
                continue
            if job.group is not None and job.group.error is not None:
                job.future.set_exception(job.group.error)
                continue
            with srv.lock:
                cooling = srv.failures > 0 and not srv.verified
            if cooling:  # another worker of this server just failed: leave the job to others
                self._queue.put(job)
                continue
            job.attempts += 1
            start = time.monotonic()
            try:
                text, finish, usage = post_chat(srv.client, job.body, self.model)
            except ServerRejected as exc:
                with srv.lock:
                    srv.failures = 0
                job.future.set_exception(exc)
            except Transient as exc:
                job.errors.append(str(exc))
                self._fault(srv, exc.retry_after)
                if job.attempts > self.retries:
                    job.future.set_exception(
                        ServerUnreachable(
                            f"request failed {job.attempts} times: {' | '.join(job.errors[-3:])}",
                            f"check the server(s): {'; '.join(curl_hint(s.url) for s in self.servers)}; "
                            "raise --request-timeout for slow pages",
                        )
                    )
                else:
                    self._queue.put(job)
            except Exception as exc:  # a bug must not leave a caller waiting forever
                job.future.set_exception(exc)
            else:
                with srv.lock:
                    srv.failures = 0
                    srv.done += 1
                job.future.set_result(
                    Completion(text, finish, srv.url, time.monotonic() - start, job.attempts, usage)
                )
