"""The per-server circuit breaker (issue 10 item 3): a burst counts once, re-checks back off."""

from __future__ import annotations

from ocrstack.client.breaker import Breaker, State
from ocrstack.core.retry import Policy

POLICY = Policy(wait_initial=1.0, wait_max=8.0, wait_jitter=0.0)


def test_failures_of_one_burst_count_once() -> None:
    b = Breaker(POLICY)
    sent = b.generation  # four requests in flight, sent while closed
    assert b.failure(sent, now=0.0) is True  # the first opens the breaker and counts
    assert [b.failure(sent, now=0.1) for _ in range(3)] == [False, False, False]
    assert (b.state, b.faults, b.bursts, b.cool_until) == (State.OPEN, 1, 1, 1.0)


def test_open_breaker_is_checked_after_the_cool_down_and_backs_off() -> None:
    b = Breaker(POLICY)
    b.failure(b.generation, now=0.0)
    assert not b.due(0.5) and b.due(1.0) and b.state is State.PROBING
    assert not b.due(1.1)  # one check at a time
    b.probed(False, now=1.2)  # still failing: backoff doubles
    assert (b.state, b.faults, b.cool_until) == (State.OPEN, 2, 3.2)
    assert b.due(3.2)
    b.probed(True, now=3.3)
    assert b.closed and b.faults == 0 and b.bursts == 1


def test_retry_after_replaces_the_backoff_and_extends_the_cool_down() -> None:
    b = Breaker(POLICY)
    sent = b.generation
    b.failure(sent, now=0.0, retry_after=5.0)
    assert b.cool_until == 5.0
    b.failure(sent, now=1.0, retry_after=7.0)  # same burst, a longer Retry-After: honoured
    assert b.cool_until == 8.0 and b.bursts == 1


def test_a_later_failure_after_recovery_is_a_new_fault() -> None:
    b = Breaker(POLICY)
    b.failure(b.generation, now=0.0)
    b.due(1.0)
    b.probed(True, now=1.0)
    assert b.failure(b.generation, now=2.0) is True and b.bursts == 2
    assert b.faults == 1  # the re-check reset the backoff


def test_an_answer_to_a_request_sent_before_the_burst_does_not_reset_the_backoff() -> None:
    b = Breaker(POLICY)
    old = b.generation
    b.failure(old, now=0.0)
    b.due(1.0)
    b.probed(False, now=1.0)
    b.success(old)  # a slow request from before the burst comes back
    assert b.state is State.OPEN and b.faults == 2
