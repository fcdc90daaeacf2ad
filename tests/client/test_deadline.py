"""A slow, dripping, huge or dying recognizer cannot hold a request past its own budget (issue 25
item 4): fake OpenAI servers on 127.0.0.1, each test bounded in time.

Before: ``--timeout`` was httpx's per-read timeout, so a server sending one byte every 2 s kept a
request for 27 minutes; a 300 MB answer was read whole; a server that died mid-request held each
job for the 600 s progress timeout whatever the request's timeout and retries.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpcore
import pytest

from ocrstack.client import chat, dispatch
from ocrstack.client.body import chat_body, tiny_png
from ocrstack.client.deadline import DeadlineBackend, Watch
from ocrstack.client.http import make_client
from ocrstack.core.errors import RequestFailed
from ocrstack.core.retry import Transient
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until

pytestmark = [pytest.mark.server]  # fake servers on 127.0.0.1


def block_body() -> dict:
    """A block request (``max_tokens`` > 1: the fake servers misbehave on these, not on probes)."""
    return chat_body("minicpm-ocr", "Text Recognition:", tiny_png(), max_tokens=64)


def test_make_client_puts_its_sockets_under_the_deadline_backend() -> None:
    with make_client("http://127.0.0.1:9", timeout=5) as client:
        assert isinstance(client._transport._pool._network_backend, DeadlineBackend)


def test_a_dripping_server_is_cut_off_at_the_request_deadline() -> None:
    # one byte every 0.2 s, status line on: no single read waits 1 s, so a per-read timeout never fires
    with FakeOpenAIServer(drip=0.2) as srv, make_client(srv.url, timeout=1.0) as client:
        with pytest.raises(Transient, match="deadline") as caught:
            chat.post_chat(client, block_body(), "minicpm-ocr", timeout=1.0)
    assert "within 1 s" in str(caught.value)


def test_abort_wakes_a_thread_blocked_on_a_dripping_server() -> None:
    watch = Watch(300.0)
    outcome: list[BaseException] = []

    def send() -> None:
        with make_client(srv.url, timeout=300.0) as client:
            try:
                chat.post_chat(client, block_body(), "minicpm-ocr", watch=watch)
            except BaseException as exc:  # recorded for the assertion below
                outcome.append(exc)

    with FakeOpenAIServer(drip=0.5) as srv:
        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        wait_until(lambda: srv.chat_count >= 1, "the request reached the server")
        watch.abort()
        sender.join(timeout=10)  # the drip would take minutes: only the abort ends it this soon
        assert not sender.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], chat.RequestAborted)


def test_an_answer_over_the_size_cap_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(chat, "MAX_ANSWER_BYTES", 100_000)
    huge = "x" * 200_000
    with FakeOpenAIServer(reply=lambda body, size: huge) as srv, make_client(srv.url, timeout=30) as client:
        with pytest.raises(Transient, match="larger than 100000 bytes"):
            chat.post_chat(client, block_body(), "minicpm-ocr")
        small = FakeOpenAIServer(reply=lambda body, size: "x" * 50_000).start()
    try:
        with make_client(small.url, timeout=30) as client:
            text, _, _ = chat.post_chat(client, block_body(), "minicpm-ocr")
        assert text == "x" * 50_000  # under the cap: read as before
    finally:
        small.stop()


def test_the_deadline_is_per_request_not_per_socket_read() -> None:
    """A second request on the same kept-alive connection gets its own, fresh deadline."""
    with FakeOpenAIServer(latency=0.3) as srv, make_client(srv.url, timeout=1.0) as client:
        for _ in range(4):  # 1.2 s of answers in all: over one request's deadline
            assert chat.post_chat(client, block_body(), "minicpm-ocr", timeout=1.0)[0]


def test_a_server_that_dies_mid_request_fails_the_block_after_its_budget(tmp_path: Path) -> None:
    srv = FakeOpenAIServer(latency=2.0).start()
    with dispatch.Dispatcher(
        [srv.url], model="minicpm-ocr", timeout=1.0, retries=1, backoff_base=0.1, progress_timeout=600
    ) as d:
        assert d.budget == 2 * 1.0 + 1 * dispatch.BACKOFF_MAX
        fut = d.submit(block_body())
        wait_until(lambda: srv.chat_count >= 1, "the block request reached the server")
        srv.kill()  # the answer never comes; new connections are refused from now on
        # the old behaviour failed it only after progress_timeout (600 s)
        with pytest.raises(RequestFailed, match=r"no answer within 10 s \(2 request\(s\) of 1 s"):
            fut.result(timeout=60)


def test_a_deadline_past_before_connecting_raises_connect_timeout() -> None:
    watch = Watch(0.0)
    with pytest.raises(httpcore.ConnectTimeout, match="deadline"):
        watch.bound(5.0, httpcore.ConnectTimeout)
