"""A circuit breaker per server: failures of one burst count once (issue 10 item 3).

States: **closed** (takes requests) -> **open** after a fault (takes none; cools down for the
shared backoff of :class:`ocrstack.core.retry.Policy`, or the server's ``Retry-After``) ->
**probing** (one background check: ``/health`` and a 1-token request) -> closed when the check
passes, open again with a longer backoff when it fails.

A *burst* is every failure of requests sent while the breaker was closed in the same
*generation*: the first failure opens the breaker (generation + 1) and counts; requests that were
already in flight and fail afterwards belong to the same burst and do not count again (four
requests failing together in a 2 s 503 burst are one fault, not four in a row). Only a counted
failure is charged to its request (a request is given up after ``retries`` charged failures:
a block that fails while the server answers others, not one caught in a burst).
"""

from __future__ import annotations

import threading
from enum import Enum

from ocrstack.core.retry import Policy


class State(str, Enum):
    """Breaker states (see the module docstring)."""

    CLOSED = "closed"
    OPEN = "open"
    PROBING = "probing"


class Breaker:
    """One server's breaker. Thread-safe; times are ``time.monotonic()`` seconds passed in.

    Attributes:
        state: :class:`State`.
        generation: incremented each time the breaker opens; a request remembers it when sent.
        faults: counted faults since the last success (the backoff exponent).
        bursts: counted faults in all (for stats).
        cool_until: when an open breaker may be probed.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.state = State.CLOSED
        self.generation = 0
        self.faults = 0
        self.bursts = 0
        self.cool_until = 0.0
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        """True when the server may take requests."""
        return self.state is State.CLOSED

    def failure(self, generation: int, now: float, retry_after: float | None = None) -> bool:
        """A request sent at ``generation`` failed. Returns True when this counts as a new fault
        (the breaker was closed and no other failure opened it since the send): it opens for
        ``policy.delay(faults, retry_after)`` s. A later failure of the same burst only extends the
        cool-down to its ``Retry-After``."""
        with self._lock:
            if self.state is State.CLOSED and generation == self.generation:
                self.faults += 1
                self.bursts += 1
                self.generation += 1
                self.state = State.OPEN
                self.cool_until = now + self.policy.delay(self.faults, retry_after)
                return True
            if retry_after is not None and self.state is State.OPEN:
                self.cool_until = max(self.cool_until, now + retry_after)
            return False

    def success(self, generation: int) -> None:
        """A request sent at ``generation`` was answered; resets the backoff when the breaker is
        still in that generation (an answer to a request sent before a burst proves nothing now)."""
        with self._lock:
            if self.state is State.CLOSED and generation == self.generation:
                self.faults = 0

    def due(self, now: float) -> bool:
        """True (and state -> probing) when the breaker is open and its cool-down is over: the
        caller runs one check and reports it with :meth:`probed`."""
        with self._lock:
            if self.state is State.OPEN and now >= self.cool_until:
                self.state = State.PROBING
                return True
            return False

    def probed(self, ok: bool, now: float, retry_after: float | None = None) -> None:
        """Result of the check started by :meth:`due`: closed (backoff reset) or open again."""
        with self._lock:
            if ok:
                self.state = State.CLOSED
                self.faults = 0
                return
            self.faults += 1
            self.state = State.OPEN
            self.cool_until = now + self.policy.delay(self.faults, retry_after)

    def trip(self, now: float) -> None:
        """Open the breaker from outside (the server failed its first probe)."""
        with self._lock:
            if self.state is State.CLOSED:
                self.faults += 1
                self.bursts += 1
                self.generation += 1
                self.state = State.OPEN
                self.cool_until = now + self.policy.delay(self.faults)
