"""A whole-request deadline and an abort switch for recognizer requests (issue 25 item 4).

httpx's timeouts are per operation: ``read=600`` allows 600 s *between two bytes*, so a server
that sends one byte every 2 s keeps a request (and the job waiting on it) alive forever, and
closing a client from another thread does not wake a thread blocked in ``recv``. Here:

* :class:`Watch` is one request's budget: ``seconds`` from its start, for everything (connect,
  send, headers, body). Every socket read or write the request makes is given
  ``min(httpx's timeout, time left)``; past the deadline it raises ``httpcore.ReadTimeout`` (or
  ``WriteTimeout``/``ConnectTimeout``), which httpx maps to its ``TimeoutException``.
* :meth:`Watch.abort` (``DELETE`` of a running job) shuts the request's socket down
  (``shutdown(SHUT_RDWR)`` wakes a blocked ``recv`` on Linux and macOS), so the waiting thread
  returns at once; :func:`ocrstack.client.chat.post_chat` then raises ``RequestAborted``.
* The watch of the running request is a context variable (:func:`watching`): httpx's sync
  client reads and writes on the calling thread, so the network backend finds it there.

:func:`guard` installs the backend on a client's transports. httpx has no public parameter for
httpcore's ``network_backend`` (httpx 0.28 builds its ``httpcore.ConnectionPool`` itself), so it
is set on the pool's ``_network_backend``, the one attribute httpcore passes to each new
connection; tests/client/test_deadline.py fails if that stops taking effect.
"""

from __future__ import annotations

import contextlib
import contextvars
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpcore
import httpx

_current: contextvars.ContextVar[Watch | None] = contextvars.ContextVar("ocrstack_watch", default=None)


class Watch:
    """One request's deadline (``seconds`` from now, monotonic clock) and abort switch. Thread-safe."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.aborted = False
        self._streams: list[Any] = []
        self._lock = threading.Lock()

    def expired(self) -> bool:
        """True once the deadline has passed."""
        return time.monotonic() >= self.deadline

    def bound(self, timeout: float | None, error: type[Exception]) -> float:
        """``timeout`` (None: unbounded) capped by the time left; raises ``error`` when none is left
        or the request was aborted."""
        left = self.deadline - time.monotonic()
        if self.aborted:
            raise error("request aborted")
        if left <= 0:
            raise error(f"no complete answer within the request's deadline of {self.seconds:g} s")
        return left if timeout is None else min(timeout, left)

    def attach(self, stream: Any) -> None:
        """Remember the socket the request uses (so :meth:`abort` can shut it down)."""
        with self._lock:
            if stream not in self._streams:
                self._streams.append(stream)
            aborted = self.aborted
        if aborted:
            _shutdown(stream)

    def abort(self) -> None:
        """Stop the request now: later reads/writes fail and a blocked one returns."""
        with self._lock:
            self.aborted = True
            streams = list(self._streams)
        for stream in streams:
            _shutdown(stream)


def _shutdown(stream: Any) -> None:
    sock = stream.get_extra_info("socket")
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def watching(watch: Watch) -> Iterator[Watch]:
    """Make ``watch`` govern every socket operation of this thread's requests inside the block."""
    token = _current.set(watch)
    try:
        yield watch
    finally:
        _current.reset(token)


class _Stream(httpcore.NetworkStream):
    """A socket stream whose reads and writes obey the current :class:`Watch`."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def _bound(self, timeout: float | None, error: type[Exception]) -> float | None:
        watch = _current.get()
        if watch is None:
            return timeout
        watch.attach(self)
        return watch.bound(timeout, error)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._bound(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._bound(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> Any:
        inner = self._inner.start_tls(
            ssl_context, server_hostname, self._bound(timeout, httpcore.ConnectTimeout)
        )
        return _Stream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sync socket backend with every stream under the current :class:`Watch`."""

    def __init__(self, inner: httpcore.NetworkBackend | None = None) -> None:
        self._inner = inner or httpcore.SyncBackend()

    def _timeout(self, timeout: float | None) -> float | None:
        watch = _current.get()
        return timeout if watch is None else watch.bound(timeout, httpcore.ConnectTimeout)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(host, port, self._timeout(timeout), local_address, socket_options)
        return _Stream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, self._timeout(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def guard(client: httpx.Client) -> httpx.Client:
    """Put every transport of ``client`` (its own and its environment-proxy mounts) on
    :class:`DeadlineBackend`; returns ``client``. Transports that are not httpx's are left alone."""
    transports = [client._transport, *client._mounts.values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if isinstance(pool, httpcore.ConnectionPool) and not isinstance(
            pool._network_backend, DeadlineBackend
        ):
            pool._network_backend = DeadlineBackend(pool._network_backend)
    return client
