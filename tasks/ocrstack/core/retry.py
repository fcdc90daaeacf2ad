"""One retry policy for every HTTP caller: fetch downloads, the parse client, readiness polling.

Built on ``stamina`` (maintained; exponential backoff with jitter, bounded attempts, testing
mode). The rules, one place:

* Retryable: connection errors, timeouts, truncated or unreadable bodies, 5xx, and 429
  (rate limited). The ``Retry-After`` header of a 429 or 503 (seconds or an HTTP date, RFC 9110
  10.2.3: "how long the service is expected to be unavailable") replaces the backoff, capped at
  :data:`RETRY_AFTER_MAX`.
* Never retried: any other 4xx (guide 8: the guide's SDK retried 400s for 600 s, which looked
  like a hang). Callers raise their own error (``ServerRejected``) for those.
* A host that is not there -- DNS failure (``socket.gaierror``) or connection refused --
  is retried only where a server may be (re)starting (the parse client, readiness polling:
  ``Policy(retry_unreachable=True)``); a download from a remote host fails at once
  (``retry_unreachable=False``; issue 10 item 9: no 30 s retry storm against a typo'd host).
* Backoff before retry *n* (1-based): ``min(wait_max, wait_initial * 2**(n-1) + U(0, wait_jitter))``,
  stamina's formula (https://stamina.hynek.me/en/stable/api.html#stamina.retry).
"""

from __future__ import annotations

import email.utils
import random
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass

import httpx
import stamina

#: Longest wait honoured from a ``Retry-After`` header (s); a larger value is clamped.
RETRY_AFTER_MAX = 60.0


class Transient(Exception):
    """A failure that may succeed later or on another server (see module docstring).

    Attributes:
        retry_after: seconds the server asked us to wait (429 ``Retry-After``), or None.
        unreachable: the host is not there (DNS failure or connection refused).
        status: the HTTP status when there was an answer (5xx, 429), else None.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        unreachable: bool = False,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.unreachable = unreachable
        self.status = status


def retryable_status(status: int) -> bool:
    """True for 5xx and 429; False for 2xx/3xx and every other 4xx (never retried, guide 8)."""
    return status == 429 or status >= 500


def retry_after(response: httpx.Response) -> float | None:
    """Seconds from a ``Retry-After`` header (delay-seconds or HTTP-date), clamped to
    ``[0, RETRY_AFTER_MAX]``; None when absent or unreadable (RFC 9110 section 10.2.3)."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), RETRY_AFTER_MAX)


def caused_by(exc: BaseException, kinds: type[BaseException] | tuple[type[BaseException], ...]) -> bool:
    """True when ``exc`` or one of the exceptions it wraps (``__cause__``/``__context__``, at
    most 8 deep: httpx wraps httpcore wraps the socket error) is one of ``kinds``."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, kinds):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def unreachable(exc: BaseException) -> bool:
    """True when ``exc`` or an exception it wraps is a DNS failure or a refused connection."""
    return caused_by(exc, (ConnectionRefusedError, socket.gaierror))


def name_unknown(exc: BaseException) -> bool:
    """True when ``exc`` wraps a DNS failure (``socket.gaierror``): a typo'd host will not start."""
    return caused_by(exc, socket.gaierror)


def from_transport(exc: httpx.TransportError | httpx.DecodingError, url: str) -> Transient:
    """The :class:`Transient` for an httpx connection error, timeout or broken body at ``url``."""
    if isinstance(exc, httpx.TimeoutException):
        return Transient(f"{url}: timed out ({type(exc).__name__})")
    return Transient(f"{url}: {type(exc).__name__}: {exc}", unreachable=unreachable(exc))


def from_status(response: httpx.Response, url: str, detail: str = "") -> Transient:
    """The :class:`Transient` for a 5xx or 429 ``response`` (``Retry-After`` kept for 429 and 503)."""
    code = response.status_code
    extra = f": {detail}" if detail else ""
    wait = retry_after(response) if code in (429, 503) else None
    return Transient(f"{url}: HTTP {code}{extra}", retry_after=wait, status=code)


def find_transient(exc: BaseException | None) -> Transient | None:
    """The :class:`Transient` that ``exc`` is or was raised from (``raise ... from``), or None."""
    for _ in range(8):
        if exc is None or isinstance(exc, Transient):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


@dataclass(frozen=True)
class Policy:
    """Attempts and backoff of one caller; the retryable set is the module's, shared.

    Attributes:
        attempts: tries in all (1 = no retry).
        wait_initial: backoff before the first retry (s).
        wait_max: cap on any backoff (s).
        wait_jitter: up to this many seconds added at random to each backoff.
        retry_unreachable: retry a DNS failure / refused connection (a server that may be
            starting); False fails at once (a download host).
    """

    attempts: int = 4
    wait_initial: float = 0.5
    wait_max: float = 8.0
    wait_jitter: float = 0.25
    retry_unreachable: bool = True

    def retries(self, exc: Exception) -> bool | float:
        """stamina's ``on`` hook: False = raise now; True = back off; a float = wait that long (429)."""
        if not isinstance(exc, Transient):
            return False
        if exc.unreachable and not self.retry_unreachable:
            return False
        return exc.retry_after if exc.retry_after is not None else True

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based); ``retry_after`` wins when given."""
        if retry_after is not None:
            return retry_after
        base = self.wait_initial * 2 ** (retry - 1) + random.uniform(0, self.wait_jitter)
        return min(self.wait_max, base)

    def context(self) -> Iterable[stamina.Attempt]:
        """A ``stamina.retry_context`` for this policy (no overall time limit: downloads can be long).

        Use::

            for attempt in policy.context():
                with attempt:
                    do_request()  # raises Transient to retry
        """
        return stamina.retry_context(
            on=self.retries,
            attempts=self.attempts,
            timeout=None,
            wait_initial=self.wait_initial,
            wait_max=self.wait_max,
            wait_jitter=self.wait_jitter,
        )
