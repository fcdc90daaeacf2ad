"""Jobs of the dispatcher (:mod:`ocrstack.client.dispatch`): one chat request each, grouped by page;
the servers they go to, and the errors they fail with."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from ocrstack.client.breaker import Breaker
from ocrstack.client.chat import Completion
from ocrstack.client.deadline import Watch
from ocrstack.client.http import curl_hint, public_url
from ocrstack.core.errors import RequestFailed, ServerUnreachable


class JobGroup:
    """Jobs that belong together (one page); cancelling fails the not-yet-sent ones at once."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def cancel(self, error: BaseException) -> None:
        """Fail every job of this group that has not been sent yet with ``error``."""
        if self.error is None:
            self.error = error


@dataclass
class Job:
    """One request: its body, the caller's future, its page group; ``attempts`` sent, ``strikes``
    (counted failures of its own, :mod:`ocrstack.client.breaker`), ``errors`` seen; ``give_up_at``
    (monotonic s, set when first sent): past it the job fails while queued (its budget of
    ``retries + 1`` requests of ``timeout`` s plus backoffs, issue 25 item 4); ``watch``: the
    deadline and abort switch of its request in flight."""

    body: dict[str, Any]
    future: Future[Completion]
    group: JobGroup | None
    attempts: int = 0
    strikes: int = 0
    errors: list[str] = field(default_factory=list)
    give_up_at: float | None = None
    watch: Watch | None = None


class Server:
    """One server of the dispatcher: its client, breaker, slots, thread pool and counts."""

    def __init__(self, url: str, capacity: int | None, concurrency: int, client_of: Any, policy: Any) -> None:
        #: Shown in messages, stats and metric labels (no credentials); ``target``: used for requests.
        self.url = public_url(url)
        self.target = url
        self.slots = capacity or concurrency
        self.capacity = self.slots
        self.client: httpx.Client = client_of(url, self.slots)
        self.breaker = Breaker(policy)
        self.pool = ThreadPoolExecutor(max_workers=self.slots + 1, thread_name_prefix=f"ocr-{url}")
        self.inflight = 0
        self.sent = 0
        self.done = 0
        self.failed = 0


def fail(job: Job, error: BaseException) -> None:
    """Fail ``job``'s future with ``error`` (nothing when it is done or cancelled by the caller)."""
    with contextlib.suppress(InvalidStateError):
        job.future.set_exception(error)


def _checks(servers: Sequence[Any]) -> str:
    return "; ".join(curl_hint(s.url) for s in servers)


def stall_error(servers: Sequence[Any], progress_timeout: float) -> ServerUnreachable:
    """The error of queued jobs when no server (``url``, ``breaker``) answered for ``progress_timeout`` s."""
    states = "; ".join(f"{s.url}: {s.breaker.state.value}, {s.breaker.bursts} fault(s)" for s in servers)
    return ServerUnreachable(
        f"no server answered any request for {progress_timeout:g} s ({states})",
        f"check the servers: {_checks(servers)}; "
        "raise --progress-timeout to wait longer for servers that restart",
    )


def over_budget(
    job: Job, budget: float, attempts: int, timeout: float, servers: Sequence[Any]
) -> RequestFailed:
    """The error of a job still unanswered ``budget`` s after its first send (issue 25 item 4)."""
    return RequestFailed(
        f"no answer within {budget:g} s ({attempts} request(s) of {timeout:g} s and their backoffs): "
        f"{' | '.join(job.errors[-3:]) or 'no server took it again'}",
        f"check the servers: {_checks(servers)}; raise --timeout or --retries to wait longer; "
        "rerun the same command to retry it",
    )
