"""A deadline for each request head and an idle limit for each body (issue 25 item 10: no
slow-client timeout).

uvicorn's h11 protocol arms a timer only between requests (``--timeout-keep-alive``): a client
that opens a connection and sends its request line and headers a byte at a time, or never
finishes them, holds the connection for ever (Slowloris). :class:`HeadDeadline` is uvicorn's h11
protocol (the ``http=`` protocol class of :class:`uvicorn.Config`) with one more timer: from the
first byte of a request (or the connection's opening) its head must be complete within
:data:`HEAD_TIMEOUT` s, or the connection is closed. Bodies are read by the app as they arrive
(uploads stream to disk with a size cap), so a slow body costs a connection, not a worker; a body
that stops coming (no byte for :data:`BODY_IDLE_TIMEOUT` s while the client still owes some, and
the server is not the one holding the reads back) closes the connection too, as nginx's
``client_body_timeout`` does: the app's ``receive()`` then reports the disconnect and the
partial upload is dropped.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

#: Seconds a client has to send a request's line and headers (nginx's client_header_timeout
#: default is 60 s; a loopback or LAN client needs milliseconds).
HEAD_TIMEOUT = 30.0
#: Seconds a request body may go without a byte (nginx's client_body_timeout default: 60 s,
#: "set only for a period between two successive read operations").
BODY_IDLE_TIMEOUT = 60.0


class HeadDeadline(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request head (see the module docstring)."""

    head_timeout = HEAD_TIMEOUT
    body_idle_timeout = BODY_IDLE_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None

    def _waiting_for_body(self) -> bool:
        c = self.cycle
        return c is not None and c.more_body and not c.response_complete and not self.flow.read_paused

    def _rearm_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        if self._waiting_for_body():
            self._body_timer = self.loop.call_later(self.body_idle_timeout, self._body_expired)

    def _body_expired(self) -> None:
        self._body_timer = None
        if self._waiting_for_body() and not self.transport.is_closing():
            self.transport.close()  # the body stopped coming

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._head_timer is None and self._waiting_for_head():
            self._head_timer = self.loop.call_later(self.head_timeout, self._expired)

    def _expired(self) -> None:
        self._head_timer = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self.transport.close()  # the head did not come in time

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        self._arm()
        super().data_received(data)
        if not self._waiting_for_head() and self._head_timer is not None:
            self._head_timer.cancel()  # a whole head came: the app has the request now
            self._head_timer = None
        self._rearm_body()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None
        super().connection_lost(exc)
