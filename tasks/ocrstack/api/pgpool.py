"""A bounded pool of PostgreSQL connections for :class:`ocrstack.api.postgres.PostgresJobStore`.

Before it, a replica had one connection behind one lock: a status request waited for the worker's
claim, page record or heartbeat (and for every reconnect attempt during a database restart). With
the pool each thread of the replica (API requests, job workers, the lease heartbeat, callbacks)
takes its own connection for one operation and gives it back.

Why not ``psycopg_pool``: it is not in the project's lock files (``envs/lock/*.txt``, ``uv.lock``)
and the store needs only this: at most ``size`` connections open; a caller takes an idle one, opens
one while fewer than ``size`` are open, else waits up to ``wait`` seconds (then
:class:`~ocrstack.api.store.StoreUnavailable`, answered 503); a connection given back closed,
broken or inside a transaction is closed instead of reused; :meth:`ConnectionPool.clear` closes the
idle ones (a database restart kills them all: the store's retry then opens fresh ones instead of
failing once per stale connection).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
from psycopg.pq import TransactionStatus

from ocrstack.api.store import StoreUnavailable


class ConnectionPool:
    """At most ``size`` connections made by ``connect``; thread-safe.

    Args:
        connect: opens one connection (raises :class:`psycopg.OperationalError` when it cannot).
        size: most connections open at once (>= 1).
        wait: seconds a caller waits for a connection when ``size`` are in use.
        where: the database as logs may name it (``host:port/dbname``), for the error message.

    Raises:
        ValueError: ``size`` < 1.
    """

    def __init__(
        self, connect: Callable[[], psycopg.Connection], size: int, wait: float, where: str = "database"
    ) -> None:
        if size < 1:
            raise ValueError(f"a connection pool needs size >= 1, not {size}")
        self._connect = connect
        self.size = size
        self.wait = wait
        self.where = where
        self._idle: list[psycopg.Connection] = []  # last given back first: the warmest
        self._open = 0
        self._cond = threading.Condition()
        self._closed = False
        #: Connections opened over the pool's life (a test sees reuse: it stays below the uses).
        self.opened = 0
        #: Times a caller found every connection in use and waited.
        self.waits = 0

    @property
    def open(self) -> int:
        """Connections open now (idle or in use)."""
        with self._cond:
            return self._open

    @property
    def idle(self) -> int:
        """Connections open and not in use now."""
        with self._cond:
            return len(self._idle)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """One connection for the ``with`` block; given back (or closed when unusable) after it.

        Raises:
            StoreUnavailable: all ``size`` connections stayed in use for ``wait`` seconds.
            psycopg.OperationalError: a new connection could not be opened.
        """
        conn = self._take()
        try:
            yield conn
        finally:
            self._give(conn)

    def _take(self) -> psycopg.Connection:
        deadline = time.monotonic() + self.wait
        with self._cond:
            waited = False
            while not self._idle and self._open >= self.size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StoreUnavailable(
                        f"all {self.size} connections to the job database {self.where} stayed busy "
                        f"for {self.wait:g} s",
                        "raise --db-pool (within PostgreSQL's max_connections) or add replicas",
                    )
                if not waited:
                    self.waits += 1
                    waited = True
                self._cond.wait(remaining)
            if self._idle:
                return self._idle.pop()
            self._open += 1
        try:
            conn = self._connect()
        except BaseException:
            with self._cond:
                self._open -= 1
                self._cond.notify()
            raise
        with self._cond:
            self.opened += 1
        return conn

    def _give(self, conn: psycopg.Connection) -> None:
        usable = (
            not conn.closed and not conn.broken and conn.info.transaction_status == TransactionStatus.IDLE
        )
        with self._cond:
            usable = usable and not self._closed
            if usable:
                self._idle.append(conn)
            else:
                self._open -= 1
            self._cond.notify()
        if not usable:
            conn.close()

    def clear(self) -> None:
        """Close the idle connections (after a connection failed: the others are likely dead too)."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._cond.notify_all()
        for conn in idle:
            conn.close()

    def close(self) -> None:
        """Close the idle connections; those in use are closed when given back (an operation after
        this still gets a connection, used once: a worker finishing its job while the app stops)."""
        with self._cond:
            self._closed = True
        self.clear()
