"""Durable job store: one SQLite database (WAL mode) plus one directory per job.

SQLite is the embedded single-node store; :mod:`ocrstack.api.postgres` is the one N replicas share
(both satisfy :class:`ocrstack.api.stores.Store`; :func:`ocrstack.api.stores.open_store` picks).

Layout under the data directory (``ocrstack api serve --data-dir``)::

    jobs.sqlite3                 jobs and page runs (WAL: readers never block the writer)
    jobs/<id>/input/<name>       the upload, under a sanitised name (never the client's path)
    jobs/<id>/out/               NAME.md, NAME.blocks.json, NAME_files/, .ocrstack-cache/

A job moves ``queued -> running -> done | partial | failed``, or to ``cancelled``. On start,
jobs left ``running`` by a killed server go back to ``queued`` (:meth:`JobStore.recover`); the
page cache under ``out/`` makes the rerun skip every finished page. ``page_runs`` records each
page computed and by which server boot, so a test can prove no finished page was recomputed.
Finished jobs expire ``ttl`` seconds after they finish and are deleted with their files (a job
whose callback is still owed keeps a hidden row until it is sent: :mod:`ocrstack.api.callbackrows`).
"""

from __future__ import annotations

import json
import secrets
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ocrstack.api import callbackrows, integrity
from ocrstack.api.jobfiles import JobFiles
from ocrstack.api.jobquery import JobQuery, select
from ocrstack.core.errors import ServerUnreachable

ACTIVE = ("queued", "running")
TERMINAL = ("done", "partial", "failed", "cancelled")
STATES = ACTIVE + TERMINAL

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT UNIQUE NOT NULL,
    state TEXT NOT NULL,
    filename TEXT NOT NULL,
    input TEXT NOT NULL,
    options TEXT NOT NULL,
    pages_total INTEGER NOT NULL,
    pages_done INTEGER NOT NULL DEFAULT 0,
    pages_cached INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    fix TEXT,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    expires REAL,
    callback TEXT,
    webhook TEXT,
    webhook_state TEXT,
    webhook_owner TEXT,
    webhook_until REAL,
    webhook_claims INTEGER NOT NULL DEFAULT 0,
    deleted REAL
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, seq);
CREATE TABLE IF NOT EXISTS page_runs (
    job_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    boot TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS page_runs_job ON page_runs(job_id);
"""


@dataclass
class Job:
    """One row of ``jobs``; ``position`` = jobs queued before it (0 = next), None when not queued."""

    id: str
    state: str
    filename: str
    input: str
    options: dict[str, Any]
    pages_total: int
    pages_done: int
    pages_cached: int
    error: str | None
    fix: str | None
    created: float
    started: float | None
    finished: float | None
    expires: float | None
    seq: int
    position: int | None = None
    #: ``callback_url`` of the request (issue 23 item 4), and its delivery record once sent.
    callback: str | None = None
    webhook: dict | None = None
    #: The callback's place in the outbox (:mod:`ocrstack.api.callbackrows`): None (no callback,
    #: or the job has not ended), ``pending``, ``sending``, ``delivered`` or ``failed``; and how
    #: many times a replica claimed it.
    webhook_state: str | None = None
    webhook_claims: int = 0
    #: Unix seconds the job was deleted or expired while its callback was owed (then hidden), or None.
    deleted: float | None = None


#: The columns of a :class:`Job` (``position`` is computed).
COLUMNS = ", ".join(f for f in Job.__dataclass_fields__ if f != "position")


def _job(row: dict[str, Any]) -> Job:
    """A :class:`Job` from a row with its ``position`` (options and webhook decoded from JSON)."""
    row["options"] = json.loads(row["options"])
    row["webhook"] = json.loads(row["webhook"]) if row["webhook"] else None
    return Job(**row)


class QueueFull(Exception):
    """The bounded queue is full (the app answers 429 with ``Retry-After``)."""


#: PostgreSQL connections per replica by default (``--db-pool``): the API's requests, the
#: ``--workers`` job threads, the lease heartbeat and callbacks each hold one for a single statement
#: or transaction, so a few serve them all; 20 replicas x 5 stay within PostgreSQL's default
#: ``max_connections`` (100, https://www.postgresql.org/docs/15/runtime-config-connection.html).
POOL_SIZE = 5


class StoreUnavailable(ServerUnreachable):
    """The job database did not answer within the reconnect window (the app answers 503)."""


class JobStore(callbackrows.SqliteCallbacks, JobFiles):
    """The SQLite store: thread-safe access to ``jobs.sqlite3`` (one process; see :class:`JobFiles`)."""

    def __init__(self, data_dir: Path, max_queue: int = 100, ttl: float = 86400.0) -> None:
        """Open (or create) ``jobs.sqlite3`` in ``data_dir``.

        Raises:
            DatabaseDamaged: the file is no SQLite database, fails ``PRAGMA quick_check``, or is
                empty beside existing job directories (:mod:`ocrstack.api.integrity`).
        """
        super().__init__(data_dir, max_queue, ttl)
        self._lock = threading.Lock()
        path = self.data_dir / "jobs.sqlite3"
        integrity.check_file(path, self.data_dir / "jobs")
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        try:
            integrity.check(self._db, path)
            self._setup()
        except sqlite3.OperationalError:  # locked, disk full, permissions: not damage
            self._db.close()
            raise
        except sqlite3.DatabaseError:
            self._db.close()
            raise integrity.opening(path) from None
        except integrity.DatabaseDamaged:
            self._db.close()
            raise

    def _setup(self) -> None:
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        columns = {r["name"] for r in self._db.execute("PRAGMA table_info(jobs)")}
        for column, kind in callbackrows.SQLITE_COLUMNS.items():  # a jobs.sqlite3 written before webhooks
            if column not in columns:
                self._db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
        self._db.execute(callbackrows.SQLITE_INDEX)
        self._db.execute(callbackrows.SQLITE_OWED)  # callbacks a database of before the outbox owes

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    # -- writes

    def create(
        self,
        *,
        upload: Path,
        name: str,
        filename: str,
        options: dict,
        pages_total: int,
        callback: str | None = None,
    ) -> Job:
        """Record a queued job and move ``upload`` to ``jobs/<id>/input/<name>``.

        Raises:
            QueueFull: ``max_queue`` jobs are already queued or running (nothing is recorded).
        """
        job_id = secrets.token_hex(12)
        target = self.job_dir(job_id) / "input" / name
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                (active,) = self._db.execute(
                    "SELECT COUNT(*) FROM jobs WHERE state IN ('queued','running')"
                ).fetchone()
                if active >= self.max_queue:
                    raise QueueFull
                target.parent.mkdir(parents=True)
                upload.replace(target)
                self._db.execute(
                    "INSERT INTO jobs (id, state, filename, input, options, pages_total, created, callback)"
                    " VALUES (?, 'queued', ?, ?, ?, ?, ?, ?)",
                    (
                        job_id,
                        filename,
                        str(target.relative_to(self.data_dir)),
                        json.dumps(options),
                        pages_total,
                        time.time(),
                        callback,
                    ),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        job = self.get(job_id)
        assert job is not None
        return job

    def claim(self) -> Job | None:
        """Atomically move the oldest queued job to ``running`` and return it (None: queue empty)."""
        with self._lock:
            row = self._db.execute(
                "UPDATE jobs SET state='running', started=? WHERE seq = "
                "(SELECT seq FROM jobs WHERE state='queued' ORDER BY seq LIMIT 1) RETURNING id",
                (time.time(),),
            ).fetchone()
        return self.get(row["id"]) if row else None

    def heartbeat(self, job_id: str) -> str:
        """``held`` while ``job_id`` runs, ``cancelled`` after a cancel, else ``lost`` (no lease here)."""
        with self._lock:
            row = self._db.execute("SELECT state FROM jobs WHERE id=?", (job_id,)).fetchone()
        state = row["state"] if row else None
        return "held" if state == "running" else "cancelled" if state == "cancelled" else "lost"

    def progress(self, job_id: str, done: int) -> None:
        """Set pages done of a running job."""
        with self._lock:
            self._db.execute("UPDATE jobs SET pages_done=? WHERE id=? AND state='running'", (done, job_id))

    def page_ran(self, job_id: str, page: int) -> None:
        """Record that 0-based ``page`` of ``job_id`` was computed (not taken from the cache) now."""
        with self._lock:
            self._db.execute(
                "INSERT INTO page_runs (job_id, page, boot, at) VALUES (?, ?, ?, ?)",
                (job_id, page, self.boot, time.time()),
            )

    def finish(
        self,
        job_id: str,
        state: str,
        *,
        done: int,
        cached: int = 0,
        error: str | None = None,
        fix: str | None = None,
    ) -> bool:
        """Move a running job to a terminal ``state`` (a cancelled job stays cancelled); True if moved."""
        now = time.time()
        with self._lock:
            cur = self._db.execute(
                "UPDATE jobs SET state=?, pages_done=?, pages_cached=?, error=?, fix=?, finished=?,"
                f" expires=?, {callbackrows.ON_FINISH} WHERE id=? AND state='running'",
                (state, done, cached, error, fix, now, now + self.ttl, job_id),
            )
        return cur.rowcount > 0

    def cancel(self, job_id: str) -> str | None:
        """Cancel a queued/running job (its files are deleted; the record stays until it expires).

        Returns the state before, or None when there is no such job.
        """
        now = time.time()
        with self._lock:
            row = self._db.execute("SELECT state FROM jobs WHERE id=?", (job_id,)).fetchone()
            if row is None:
                return None
            if row["state"] in ACTIVE:
                self._db.execute(
                    "UPDATE jobs SET state='cancelled', finished=?, expires=? WHERE id=?",
                    (now, now + self.ttl, job_id),
                )
        return str(row["state"])

    def delete(self, job_id: str) -> None:
        """Delete the job's directory, then its record and page runs: the files go first, so a
        DELETE on a full data dir frees the space the database's own write then needs. A record
        whose callback is owed stays, hidden, until it is sent (:data:`callbackrows.HIDE`)."""
        shutil.rmtree(self.job_dir(job_id), ignore_errors=True)
        with self._lock:
            self._db.execute(callbackrows.HIDE.format(p="?"), (time.time(), job_id))
            self._db.execute(callbackrows.DROP.format(p="?"), (job_id,))
            self._db.execute("DELETE FROM page_runs WHERE job_id=?", (job_id,))

    def recover(self) -> int:
        """Requeue jobs a killed server left ``running``; drop stale partial uploads. Returns the count."""
        for part in (self.data_dir / "uploads").glob("*.part"):
            part.unlink(missing_ok=True)
        with self._lock:
            cur = self._db.execute("UPDATE jobs SET state='queued' WHERE state='running'")
            self._db.execute(callbackrows.SQLITE_RECOVER)  # one process: its own sends died with it
        return cur.rowcount

    def expire(self, now: float | None = None) -> list[str]:
        """Delete finished jobs whose TTL has passed (as :meth:`delete`), and the hidden records
        whose callback was sent since; return the ids of the jobs expired now."""
        now = time.time() if now is None else now
        with self._lock:
            ids = [
                r["id"]
                for r in self._db.execute(
                    f"SELECT id FROM jobs WHERE expires <= ? AND {callbackrows.VISIBLE}", (now,)
                )
            ]
        for job_id in ids:
            self.delete(job_id)
        with self._lock:
            self._db.execute(callbackrows.SWEEP)
        return ids

    # -- reads

    def get(self, job_id: str, *, hidden: bool = False) -> Job | None:
        """The job with its queue position, or None (a deleted job owing its callback too, unless
        ``hidden``: the outbox reads it)."""
        where = "id=?" if hidden else f"id=? AND {callbackrows.VISIBLE}"
        with self._lock:
            row = self._db.execute(f"SELECT {COLUMNS} FROM jobs WHERE {where}", (job_id,)).fetchone()
            if row is None:
                return None
            position = None
            if row["state"] == "queued":
                (position,) = self._db.execute(
                    "SELECT COUNT(*) FROM jobs WHERE state='queued' AND seq < ?", (row["seq"],)
                ).fetchone()
        return _job({**dict(row), "position": position})

    def jobs(self, q: JobQuery) -> list[Job]:
        """The jobs of one page of ``GET /v1/jobs``, newest first (``q.limit`` + 1 at most)."""
        sql, args = select(q, "?", COLUMNS)
        with self._lock:
            return [_job(dict(r)) for r in self._db.execute(sql, args)]

    def counts(self) -> dict[str, int]:
        """Jobs per state (every state present, 0 when none)."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT state, COUNT(*) AS n FROM jobs WHERE {callbackrows.VISIBLE} GROUP BY state"
            ).fetchall()
        out = dict.fromkeys(STATES, 0)
        out.update({r["state"]: r["n"] for r in rows})
        return out

    def page_runs(self, job_id: str | None = None) -> list[tuple[str, int, str]]:
        """``(job_id, page, boot)`` for every page computed (all jobs, or one)."""
        sql, args = "SELECT job_id, page, boot FROM page_runs", ()
        if job_id is not None:
            sql, args = sql + " WHERE job_id=?", (job_id,)
        with self._lock:
            return [(r[0], r[1], r[2]) for r in self._db.execute(sql, args)]
