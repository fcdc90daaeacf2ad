"""The shared retry policy (ocrstack.core.retry) as the parse client applies it: 429 is retried
(it was a ServerRejected before issue 9), other 4xx never are; the rules themselves on recorded
answers and exceptions."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from ocrstack.client import Dispatcher, chat_body
from ocrstack.core import retry
from ocrstack.core.errors import ServerRejected
from ocrstack.core.retry import Policy, Transient
from ocrstack.testing.fake_openai import FakeOpenAIServer

BODY = chat_body("minicpm-ocr", "OCR", "data:image/png;base64,", max_tokens=1)


def _response(status: int, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=httpx.Request("GET", "http://x"))


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (503, True), (429, True), (400, False), (404, False), (413, False), (200, False)],
)
def test_retryable_statuses(status: int, retryable: bool) -> None:
    assert retry.retryable_status(status) is retryable


def test_retry_after_seconds_date_and_cap() -> None:
    assert retry.retry_after(_response(429, **{"Retry-After": "7"})) == 7.0
    assert retry.retry_after(_response(429, **{"Retry-After": "86400"})) == retry.RETRY_AFTER_MAX
    soon = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 20))
    assert 15 <= retry.retry_after(_response(429, **{"Retry-After": soon})) <= 20
    assert retry.retry_after(_response(429, **{"Retry-After": "soon"})) is None
    assert retry.retry_after(_response(429)) is None


def test_unreachable_host_is_retried_only_where_a_server_may_be_starting() -> None:
    try:
        raise httpx.ConnectError("refused") from ConnectionRefusedError(111, "Connection refused")
    except httpx.ConnectError as exc:
        refused = retry.from_transport(exc, "http://127.0.0.1:1")
    try:
        raise httpx.ConnectError("dns") from socket.gaierror(-2, "Name or service not known")
    except httpx.ConnectError as exc:
        dns = retry.from_transport(exc, "http://nowhere.invalid")
    reset = retry.from_transport(httpx.ReadError("reset"), "http://h")
    assert refused.unreachable and dns.unreachable and not reset.unreachable
    assert Policy(retry_unreachable=True).retries(refused) is True
    assert Policy(retry_unreachable=False).retries(dns) is False
    assert Policy(retry_unreachable=False).retries(reset) is True
    assert Policy().retries(ValueError("bug")) is False  # only Transient is retried
    assert Policy().retries(Transient("429", retry_after=2.5)) == 2.5  # stamina: wait exactly this


def test_backoff_is_exponential_with_bounded_jitter_and_capped() -> None:
    pol = Policy(wait_initial=1.0, wait_max=5.0, wait_jitter=0.25)
    for n, base in ((1, 1.0), (2, 2.0), (3, 4.0)):
        assert base <= pol.delay(n) <= base + 0.25
    assert pol.delay(10) == 5.0
    assert pol.delay(1, retry_after=9.0) == 9.0


@pytest.mark.server
def test_dispatcher_retries_429_then_succeeds() -> None:
    with FakeOpenAIServer(fail_first=2, fail_status=429) as srv:
        with Dispatcher([srv.url], model="minicpm-ocr", retries=3, backoff_base=0.01) as d:
            done = d.submit(BODY).result(timeout=20)
        # the request (429: breaker opens), a 1-token re-check (429), a re-check (ok), the request
        assert srv.chat_count == 4 and done.attempts == 2


@pytest.mark.server
def test_dispatcher_honours_retry_after_of_a_503() -> None:
    with FakeOpenAIServer(fail_first=1, fail_status=503, retry_after=1) as srv:
        with Dispatcher([srv.url], model="minicpm-ocr", retries=3, backoff_base=0.01) as d:
            start = time.monotonic()
            d.submit(BODY).result(timeout=20)
            elapsed = time.monotonic() - start
    assert elapsed >= 1.0  # not the 0.01 s backoff
    assert srv.chat_count == 3  # the request, the re-check after 1 s, the request again


@pytest.mark.server
def test_dispatcher_never_retries_other_4xx() -> None:
    with FakeOpenAIServer(status=403, error_message="forbidden") as srv:
        with Dispatcher([srv.url], model="minicpm-ocr", retries=3, backoff_base=0.01) as d:
            with pytest.raises(ServerRejected, match="HTTP 403"):
                d.submit(BODY).result(timeout=20)
        assert srv.chat_count == 1
