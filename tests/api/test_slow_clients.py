"""Issue 25 item 10 on loopback: a client that never finishes its request head loses the connection
after the head deadline (uvicorn alone keeps it for ever), a complete head is served; a second
``api serve`` on the same SQLite data dir refuses to start instead of requeueing the first one's
running job."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from ocrstack.api.process import ServiceProcess
from ocrstack.api.slowclients import HeadDeadline
from ocrstack.core.errors import ServerUnreachable
from support.wait import wait_until

pytestmark = [pytest.mark.server]


class _Quick(HeadDeadline):
    head_timeout = 0.5
    body_idle_timeout = 0.5


async def _app(scope, receive, send) -> None:  # reads the whole body, then 200 "ok"
    if scope["type"] != "http":
        return
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def port():
    server = uvicorn.Server(uvicorn.Config(_app, host="127.0.0.1", port=0, http=_Quick, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, "uvicorn started")
    yield server.servers[0].sockets[0].getsockname()[1]
    server.should_exit = True
    thread.join(timeout=10)


def _closed_by_server(sock: socket.socket, limit: float = 10.0) -> bool:
    sock.settimeout(limit)
    try:
        return sock.recv(1024) == b""
    except (TimeoutError, ConnectionResetError) as exc:
        return isinstance(exc, ConnectionResetError)


def test_an_unfinished_head_loses_the_connection(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never the rest
        assert _closed_by_server(sock)  # uvicorn's own h11 protocol waits for ever here


def test_a_head_sent_in_pieces_within_the_deadline_is_served(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for piece in (b"GET / HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n", b"\r\n"):
            sock.sendall(piece)
            time.sleep(0.1)
        sock.settimeout(10)
        assert sock.recv(1024).startswith(b"HTTP/1.1 200")


def test_a_body_that_stops_coming_loses_the_connection(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n0123456789")
        assert _closed_by_server(sock)  # 90 bytes owed, none sent: uvicorn alone waits for ever


def test_a_body_sent_slowly_but_steadily_is_served(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 6\r\n\r\n")
        for piece in (b"ab", b"cd", b"ef"):  # 0.9 s in all, each gap under the idle limit
            time.sleep(0.3)
            sock.sendall(piece)
        sock.settimeout(10)
        assert sock.recv(1024).startswith(b"HTTP/1.1 200")


def test_a_second_service_on_the_same_data_dir_refuses_to_start(tmp_path: Path) -> None:
    with ServiceProcess(tmp_path / "data", log=tmp_path / "first.log"):
        second = ServiceProcess(tmp_path / "data", log=tmp_path / "second.log")
        with pytest.raises(ServerUnreachable, match="did not start"):
            second.start(timeout=60)
        assert "another ocrstack api serve uses --data-dir" in (tmp_path / "second.log").read_text()
