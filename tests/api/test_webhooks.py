"""Job callbacks: signature and replay window, allowed hosts (none by default), retries after a
receiver error, a real service delivering once per job end to a local receiver, and a callback
cut off by SIGKILL of its sender delivered all the same (by the next start of a SQLite service,
or by another PostgreSQL replica)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from api.helpers import wait_job
from ocrstack.api import webhooks
from ocrstack.api.process import ServiceProcess
from ocrstack.core.errors import UsageError
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until

SECRET = "hook-secret"


class Receiver:
    """A local HTTP receiver answering the scripted statuses in turn (then 204); keeps each request.

    ``stall``: the first POST gets no answer until this event is set (its sender is killed meanwhile).
    """

    def __init__(self, statuses: tuple[int, ...] = (), stall: threading.Event | None = None) -> None:
        self.statuses = list(statuses)
        self.requests: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                if stall is not None and len(receiver.requests) == 1:
                    stall.wait(60)
                try:
                    self.send_response(receiver.statuses.pop(0) if receiver.statuses else 204)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the sender is gone
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.url = f"http://{self.host}/hook"

    def __enter__(self) -> Receiver:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver((500,)) as r:
        yield r


def test_signature_and_replay_window() -> None:
    body = b'{"id": "x"}'
    ts = str(int(time.time()))
    headers = {"X-Ocrstack-Timestamp": ts, "X-Ocrstack-Signature": webhooks.signature(SECRET, ts, body)}
    assert webhooks.verify(SECRET, headers, body)
    assert not webhooks.verify(SECRET, headers, body + b" ")  # tampered body
    assert not webhooks.verify("other", headers, body)  # another key
    assert not webhooks.verify(SECRET, headers, body, now=int(ts) + webhooks.TOLERANCE + 1)  # replayed
    assert not webhooks.verify(SECRET, {**headers, "X-Ocrstack-Timestamp": "soon"}, body)


def test_verify_takes_header_names_in_any_case_and_asgi_pairs() -> None:
    """HTTP header names are case-insensitive (RFC 9110 5.1): an ASGI scope, API gateways and
    plain dicts hand them over lower-cased."""
    body = b'{"id": "x"}'
    ts = str(int(time.time()))
    sig = webhooks.signature(SECRET, ts, body)
    lower = {"x-ocrstack-timestamp": ts, "x-ocrstack-signature": sig}
    assert webhooks.verify(SECRET, lower, body)
    assert webhooks.verify(SECRET.encode(), lower, body)
    scope = [(b"x-ocrstack-timestamp", ts.encode()), (b"x-ocrstack-signature", sig.encode())]
    assert webhooks.verify(SECRET, scope, body)
    assert not webhooks.verify(SECRET, scope, body + b" ")


def test_callback_hosts_default_to_none() -> None:
    with pytest.raises(UsageError, match="not allowed") as info:
        webhooks.check_url("http://127.0.0.1:9/hook", ())
    assert "poll status_url" in info.value.remedy
    assert webhooks.check_url("https://hooks.example/x", ["hooks.example"]) == "https://hooks.example/x"
    assert webhooks.check_url("http://127.0.0.1:9/h", ["127.0.0.1:9"]) == "http://127.0.0.1:9/h"
    with pytest.raises(UsageError, match="not allowed"):
        webhooks.check_url("http://127.0.0.1:10/h", ["127.0.0.1:9"])  # another port of that host
    with pytest.raises(UsageError, match="http"):
        webhooks.check_url("file:///etc/passwd", ["localhost"])


def test_an_ipv6_callback_host_is_listed_as_urls_write_it() -> None:
    assert webhooks.check_url("http://[::1]:9/h", ["[::1]:9"]) == "http://[::1]:9/h"  # HOST:PORT
    assert webhooks.check_url("http://[::1]:9/h", ["[::1]"]) == "http://[::1]:9/h"  # any port
    assert webhooks.check_url("http://[::1]/h", ["::1"]) == "http://[::1]/h"  # as before
    with pytest.raises(UsageError, match=r"\[::1\]:10 is not allowed"):
        webhooks.check_url("http://[::1]:10/h", ["[::1]:9"])


def test_a_callback_url_the_sender_could_not_send_is_refused() -> None:
    allowed = ["127.0.0.1:9"]
    for bad in ("http://127.0.0.1:9/h\x00", "http://127.0.0.1:9/\x7f", "http://127.0.0.1:99999/h"):
        with pytest.raises(UsageError, match="callback_url"):  # a 400 at submit, not a 500
            webhooks.check_url(bad, allowed + ["127.0.0.1:99999"])


class Trickler:
    """A receiver that answers every POST one header byte per ``gap`` seconds for ``seconds``:
    each read of its sender is quick, the answer as a whole is not."""

    def __init__(self, seconds: float = 6.0, gap: float = 0.2) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self.seconds, self.gap, self.posts = seconds, gap, 0

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 204 No Content\r\nX-Slow: ")
                for _ in range(int(self.seconds / self.gap)):
                    time.sleep(self.gap)
                    conn.sendall(b"a")
                conn.sendall(b"\r\nContent-Length: 0\r\n\r\n")
            except OSError:  # the sender gave up
                pass

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.posts += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def __enter__(self) -> Trickler:
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_a_post_ends_within_its_timeout_when_the_receiver_trickles_its_answer() -> None:
    with Trickler(seconds=6.0) as rx:
        started = time.monotonic()
        record = webhooks.deliver(rx.url, {"id": "j"}, SECRET, attempts=2, backoff=0.01, timeout=1.0)
        took = time.monotonic() - started
    # two POSTs of at most 1 s each (README: "a POST may take min(10 s, --lease-seconds)"), so the
    # outbox's hold on the callback outlasts them; not the 12 s the trickled answers would take
    assert took < 4.0, took
    assert record is not None and (record["state"], record["attempts"], rx.posts) == ("failed", 2, 2)
    assert record["error"] == "Timeout"


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_deliver_abandoned_before_an_answer_stops_at_once() -> None:
    release = threading.Event()
    with Receiver(stall=release) as rx:
        started = time.monotonic()
        record = webhooks.deliver(rx.url, {"id": "j"}, SECRET, abandon=lambda: bool(rx.requests))
        took = time.monotonic() - started
        release.set()
        assert webhooks.deliver(rx.url, {"id": "j"}, SECRET, abandon=lambda: True) is None  # no POST
    assert record is None and took < 2.0, took  # not the 10 s the POST may take
    assert len(rx.requests) == 1


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_deliver_retries_after_a_receiver_error(receiver: Receiver) -> None:
    record = webhooks.deliver(receiver.url, {"id": "j1", "status": "done"}, SECRET, backoff=0.01)
    assert record["state"] == "delivered" and record["attempts"] == 2 and record["status"] == 204
    assert len(receiver.requests) == 2
    for headers, body in receiver.requests:
        assert webhooks.verify(SECRET, headers, body) and json.loads(body)["id"] == "j1"


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_deliver_stops_at_a_refusal_and_gives_up_after_the_attempts() -> None:
    with Receiver((400,)) as r:
        record = webhooks.deliver(r.url, {"id": "j"}, SECRET, backoff=0.01)
        assert (record["state"], record["attempts"], record["error"]) == ("failed", 1, "HTTP 400")
    with Receiver((503, 503, 503)) as r:
        record = webhooks.deliver(r.url, {"id": "j"}, SECRET, attempts=3, backoff=0.01)
        assert (record["state"], record["attempts"], len(r.requests)) == ("failed", 3, 3)


@pytest.mark.server
def test_service_delivers_once_per_job_end(tmp_path: Path, tiny_png: Path, receiver: Receiver) -> None:
    with FakeOpenAIServer() as fake:
        args = ["--recognizer", "openai", "--server-url", fake.url, "--layout", "none",
                "--webhook-host", receiver.host, "--webhook-secret", SECRET]  # fmt: skip
        with (
            ServiceProcess(tmp_path / "data", args) as svc,
            httpx.Client(base_url=svc.url, trust_env=False, timeout=30) as c,
        ):
            png = tiny_png.read_bytes()
            refused = c.post(
                "/v1/jobs", files={"file": ("a.png", png)}, data={"callback_url": "http://10.0.0.1/h"}
            )
            assert refused.status_code == 400 and "not allowed" in refused.json()["error"]
            job = c.post(
                "/v1/jobs", files={"file": ("a.png", png)}, data={"callback_url": receiver.url}
            ).json()
            assert wait_job(c, job["id"])["status"] == "done"
            wait_until(
                lambda: (
                    (c.get(job["status_url"]).json().get("webhook") or {}).get("state")
                    in ("delivered", "failed")
                ),
                "the job's webhook delivery record",
            )
            final = c.get(job["status_url"]).json()
    assert final["webhook"]["state"] == "delivered" and final["webhook"]["attempts"] == 2  # after the 500
    bodies = [json.loads(body) for _, body in receiver.requests]
    assert [b["id"] for b in bodies] == [job["id"], job["id"]]  # one delivery, retried once
    assert bodies[-1]["status"] == "done" and bodies[-1]["result_url"] == job["result_url"]
    assert all(webhooks.verify(SECRET, h, body) for h, body in receiver.requests)


def _hook_args(rx: Receiver, fake: FakeOpenAIServer, *extra: str) -> list[str]:
    return ["--recognizer", "openai", "--server-url", fake.url, "--layout", "none",
            "--webhook-host", rx.host, "--webhook-secret", SECRET, *extra]  # fmt: skip


def _delivered(c: httpx.Client, job_id: str) -> dict:
    body = c.get(f"/v1/jobs/{job_id}").json()
    return body if (body.get("webhook") or {}).get("state") == "delivered" else {}


@pytest.mark.server
def test_a_callback_cut_off_by_sigkill_is_sent_by_the_next_start(tmp_path: Path, tiny_png: Path) -> None:
    release = threading.Event()
    with FakeOpenAIServer() as fake, Receiver(stall=release) as rx:
        args = _hook_args(rx, fake)
        with ServiceProcess(tmp_path / "data", args, log=tmp_path / "first.log") as first:
            with httpx.Client(base_url=first.url, trust_env=False, timeout=30) as c:
                job = c.post(
                    "/v1/jobs",
                    files={"file": ("a.png", tiny_png.read_bytes())},
                    data={"callback_url": rx.url},
                ).json()
                wait_until(lambda: rx.requests, "the first POST of the job's callback")
                assert c.get(job["status_url"]).json()["webhook"] == {"state": "sending", "claims": 1}
            first.kill()  # the job is done, its callback sent but not answered nor recorded
        release.set()
        with (
            ServiceProcess(tmp_path / "data", args, log=tmp_path / "again.log") as again,
            httpx.Client(base_url=again.url, trust_env=False, timeout=30) as c,
        ):
            final = wait_until(lambda: _delivered(c, job["id"]), "the callback delivered after the restart")
    assert final["status"] == "done" and final["webhook"]["claims"] == 2
    assert [json.loads(body)["id"] for _, body in rx.requests] == [job["id"], job["id"]]  # at least once
    assert all(webhooks.verify(SECRET, h, body) for h, body in rx.requests)


@pytest.mark.server
@pytest.mark.slow
def test_a_replica_killed_mid_callback_leaves_it_to_another(
    pg_url: str, tmp_path: Path, tiny_png: Path
) -> None:
    import psycopg

    release = threading.Event()
    data = tmp_path / "data"
    with FakeOpenAIServer() as fake, Receiver(stall=release) as rx, ExitStack() as stack:
        args = _hook_args(rx, fake, "--database", pg_url, "--lease-seconds", "2")
        a, b = (stack.enter_context(ServiceProcess(data, args, log=tmp_path / f"{n}.log")) for n in "ab")
        with httpx.Client(base_url=a.url, trust_env=False, timeout=30) as c:
            job = c.post(
                "/v1/jobs", files={"file": ("a.png", tiny_png.read_bytes())}, data={"callback_url": rx.url}
            ).json()
        wait_until(lambda: rx.requests, "the first POST of the job's callback")
        with psycopg.connect(pg_url) as conn:
            (owner,) = conn.execute("SELECT webhook_owner FROM jobs WHERE id=%s", (job["id"],)).fetchone()
        sender, other = sorted((a, b), key=lambda r: f"worker {owner}:" not in r.log.read_text())
        sender.kill()
        release.set()
        with httpx.Client(base_url=other.url, trust_env=False, timeout=30) as c:
            final = wait_until(
                lambda: _delivered(c, job["id"]), "the callback delivered by the other replica"
            )
        with psycopg.connect(pg_url) as conn:
            (now_owner,) = conn.execute("SELECT webhook_owner FROM jobs WHERE id=%s", (job["id"],)).fetchone()
    assert f"worker {now_owner}:" in other.log.read_text() and now_owner != owner
    assert final["webhook"]["claims"] == 2 and final["webhook"]["attempts"] == 1
    assert [json.loads(body)["id"] for _, body in rx.requests] == [job["id"], job["id"]]
