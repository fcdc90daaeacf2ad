"""The PostgreSQL job store: one queue for N service replicas (``--database postgresql://...``).

Same files as the SQLite store (:class:`ocrstack.api.jobfiles.JobFiles` under the shared
``--data-dir``); the rows live in PostgreSQL. Claims are leases:

* :meth:`PostgresJobStore.claim` takes the oldest job that is ``queued`` or ``running`` with an
  expired lease (``SELECT ... FOR UPDATE SKIP LOCKED``: two replicas never take the same row)
  and sets ``owner`` (this process's ``boot``) and ``lease_until`` (database clock + ``lease``);
* the worker's heartbeat (:meth:`~PostgresJobStore.heartbeat`) renews the lease every ``lease/3``;
* a replica killed mid-job stops renewing; after ``lease`` seconds another replica claims the job
  and reruns it over the same output directory, so the page cache supplies every finished page;
* :meth:`~PostgresJobStore.finish` only moves a job its caller still holds, so a job is finished
  (and its result published) once.

The schema is versioned: ``migrations/NNNN_name.sql`` applied in order under an advisory lock,
each recorded in ``schema_version``. The connection URL is kept private: logs and error messages
name the database as ``host:port/dbname`` only (:func:`describe`).
"""

from __future__ import annotations

import json
import logging
import time
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from ocrstack.api.callbackrows import DROP, HIDE, ON_FINISH, SWEEP, VISIBLE, PostgresCallbacks
from ocrstack.api.jobfiles import JobFiles
from ocrstack.api.jobquery import POSITION, JobQuery, select
from ocrstack.api.pgpool import ConnectionPool
from ocrstack.api.store import COLUMNS, POOL_SIZE, STATES, Job, QueueFull, StoreUnavailable

log = logging.getLogger("ocrstack.api")
#: ``pg_advisory_xact_lock`` keys: migrations, and the queue bound check in :meth:`create`.
MIGRATION_LOCK, QUEUE_LOCK = 0x0C5_0001, 0x0C5_0002
#: Partial uploads older than this are dropped on start (younger ones may be another replica's).
STALE_UPLOAD = 3600.0
_NOW = "EXTRACT(EPOCH FROM clock_timestamp())"


def describe(dsn: str) -> str:
    """``host:port/dbname`` of a connection URL: what logs and messages may show (no user, no password)."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(unparsable database URL)"
    return f"{info.get('host') or 'localhost'}:{info.get('port') or 5432}/{info.get('dbname') or ''}"


def migrations() -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` of ``migrations/NNNN_name.sql`` in version order."""
    out = []
    for entry in resources.files("ocrstack.api").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            version, _, name = entry.name[:-4].partition("_")
            out.append((int(version), name, entry.read_text(encoding="utf-8")))
    return sorted(out)


def migrate(conn: psycopg.Connection) -> int:
    """Apply the migrations newer than ``schema_version``; return the version now (one transaction).

    Raises:
        StoreUnavailable: the database holds a newer schema than this ocrstack knows.
    """
    known = migrations()
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version"
            " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied DOUBLE PRECISION NOT NULL)"
        )
        row = conn.execute("SELECT COALESCE(MAX(version), 0) AS v FROM schema_version").fetchone()
        current = int(row["v"] if isinstance(row, dict) else row[0])
        latest = known[-1][0] if known else 0
        if current > latest:
            raise StoreUnavailable(
                f"the job database has schema version {current}, this ocrstack knows up to {latest}",
                "upgrade ocrstack on this replica to the version the others run",
            )
        for version, name, sql in known:
            if version > current:
                conn.execute(sql.encode())
                conn.execute(
                    "INSERT INTO schema_version (version, name, applied) VALUES (%s, %s, %s)",
                    (version, name, time.time()),
                )
                log.info("job database: applied migration %04d %s", version, name)
                current = version
    return current


class PostgresJobStore(PostgresCallbacks, JobFiles):
    """Jobs in PostgreSQL, files under the shared ``data_dir``; safe for many processes and threads.

    Args:
        dsn: ``postgresql://...`` (kept private; see :func:`describe`).
        lease: seconds a claim lasts without a heartbeat (the hand-over delay after a crash).
        reconnect: seconds an operation keeps reconnecting (database restart), or waits for a
            free connection, before it raises.
        pool: most connections this store opens at once (API requests, workers, heartbeat share them).

    Raises:
        StoreUnavailable: the database did not answer within ``reconnect`` seconds.
    """

    def __init__(
        self,
        dsn: str,
        data_dir: Path,
        max_queue: int = 100,
        ttl: float = 86400.0,
        lease: float = 30.0,
        reconnect: float = 60.0,
        pool: int = POOL_SIZE,
    ) -> None:
        super().__init__(data_dir, max_queue, ttl)
        self._dsn = dsn
        self.where = describe(dsn)
        self.lease = lease
        self.reconnect = reconnect
        #: The replica's connections (:class:`~ocrstack.api.pgpool.ConnectionPool`, ``pool`` at most).
        self.pool = ConnectionPool(self._connect, pool, wait=reconnect, where=self.where)
        self.schema_version = self._do(migrate)

    def __repr__(self) -> str:
        return f"PostgresJobStore({self.where}, data_dir={str(self.data_dir)!r})"

    # -- connection

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self._dsn, autocommit=True, connect_timeout=5, row_factory=dict_row)

    def _do(self, op: Any) -> Any:
        """Run ``op(connection)`` on a pooled connection, reconnecting with backoff for up to
        ``reconnect`` seconds (a failed connection is closed, and the idle ones with it)."""
        deadline = time.monotonic() + self.reconnect
        delay = 0.1
        while True:
            try:
                with self.pool.connection() as conn:
                    return op(conn)
            except psycopg.OperationalError as exc:
                self.pool.clear()  # a database restart has killed the idle ones too
                if time.monotonic() >= deadline:
                    raise StoreUnavailable(
                        f"job database {self.where} is unreachable ({type(exc).__name__})",
                        "start PostgreSQL or fix --database / $OCRSTACK_DATABASE_URL",
                    ) from None
                log.warning("job database %s: %s; reconnecting", self.where, type(exc).__name__)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _one(self, sql: str, args: tuple | dict = ()) -> dict | None:
        return self._do(lambda c: c.execute(sql, args).fetchone())

    def close(self) -> None:
        """Close the pooled connections."""
        self.pool.close()

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
        """As :meth:`ocrstack.api.store.JobStore.create` (the bound holds across replicas).

        Raises:
            QueueFull: ``max_queue`` jobs are already queued or running (nothing is recorded).
        """
        import secrets

        job_id = secrets.token_hex(12)
        target = self.job_dir(job_id) / "input" / name

        def op(conn: psycopg.Connection) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (QUEUE_LOCK,))
                row = conn.execute("SELECT COUNT(*) AS n FROM jobs WHERE state IN ('queued','running')")
                if row.fetchone()["n"] >= self.max_queue:
                    raise QueueFull
                conn.execute(
                    "INSERT INTO jobs (id, state, filename, input, options, pages_total, created, callback)"
                    " VALUES (%s, 'queued', %s, %s, %s, %s, %s, %s)",
                    (job_id, filename, str(target.relative_to(self.data_dir)), json.dumps(options),
                     pages_total, time.time(), callback),
                )  # fmt: skip
                target.parent.mkdir(parents=True, exist_ok=True)
                upload.replace(target)

        self._do(op)
        job = self.get(job_id)
        assert job is not None
        return job

    def claim(self) -> Job | None:
        """Hold the oldest queued job, or a running one whose lease expired (its replica died)."""
        row = self._one(
            f"UPDATE jobs SET state='running', owner=%(owner)s, lease_until={_NOW} + %(lease)s,"
            " started=COALESCE(started, %(now)s)"
            " WHERE seq = (SELECT seq FROM jobs WHERE state='queued'"
            f" OR (state='running' AND lease_until < {_NOW}) ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)"
            f" RETURNING {COLUMNS}",
            {"owner": self.boot, "lease": self.lease, "now": time.time()},
        )
        return _job(row) if row else None

    def heartbeat(self, job_id: str) -> str:
        """Renew this store's lease on ``job_id``: ``held``, ``cancelled`` or ``lost`` (taken over/gone)."""
        row = self._one(
            f"UPDATE jobs SET lease_until={_NOW} + %s"
            " WHERE id=%s AND owner=%s AND state='running' RETURNING id",
            (self.lease, job_id, self.boot),
        )
        if row:
            return "held"
        row = self._one("SELECT state FROM jobs WHERE id=%s", (job_id,))
        return "cancelled" if row and row["state"] == "cancelled" else "lost"

    def progress(self, job_id: str, done: int) -> None:
        """Set pages done of a job this store holds."""
        self._do(
            lambda c: c.execute(
                "UPDATE jobs SET pages_done=%s WHERE id=%s AND state='running' AND owner=%s",
                (done, job_id, self.boot),
            )
        )

    def page_ran(self, job_id: str, page: int) -> None:
        """Record that 0-based ``page`` of ``job_id`` was computed by this process now."""
        self._do(
            lambda c: c.execute(
                "INSERT INTO page_runs (job_id, page, boot, at) VALUES (%s, %s, %s, %s)",
                (job_id, page, self.boot, time.time()),
            )
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
        """Move a job this store holds to a terminal ``state``; False when it no longer holds it."""
        now = time.time()
        row = self._one(
            "UPDATE jobs SET state=%s, pages_done=%s, pages_cached=%s, error=%s, fix=%s, finished=%s,"
            f" expires=%s, lease_until=NULL, {ON_FINISH} WHERE id=%s AND state='running' AND owner=%s"
            " RETURNING id",
            (state, done, cached, error, fix, now, now + self.ttl, job_id, self.boot),
        )
        return row is not None

    def cancel(self, job_id: str) -> str | None:
        """Cancel a queued/running job (on any replica); the state before, None when unknown."""
        now = time.time()

        def op(conn: psycopg.Connection) -> str | None:
            with conn.transaction():
                row = conn.execute("SELECT state FROM jobs WHERE id=%s FOR UPDATE", (job_id,)).fetchone()
                if row is None:
                    return None
                if row["state"] in ("queued", "running"):
                    conn.execute(
                        "UPDATE jobs SET state='cancelled', finished=%s, expires=%s WHERE id=%s",
                        (now, now + self.ttl, job_id),
                    )
                return str(row["state"])

        return self._do(op)

    def delete(self, job_id: str) -> None:
        """Delete the job's directory, then its record and page runs (files first, as the SQLite
        store does: a DELETE frees a full data dir's space even when the record's write fails).
        A record whose callback is owed stays, hidden, until it is sent (``callbackrows.HIDE``)."""
        import shutil

        def op(conn: psycopg.Connection) -> None:
            with conn.transaction():
                conn.execute(HIDE.format(p="%s"), (time.time(), job_id))
                conn.execute(DROP.format(p="%s"), (job_id,))
                conn.execute("DELETE FROM page_runs WHERE job_id=%s", (job_id,))

        shutil.rmtree(self.job_dir(job_id), ignore_errors=True)
        self._do(op)

    def recover(self) -> int:
        """Requeue running jobs whose lease expired; drop partial uploads older than an hour."""
        cutoff = time.time() - STALE_UPLOAD
        for part in (self.data_dir / "uploads").glob("*.part"):
            try:
                if part.stat().st_mtime < cutoff:
                    part.unlink()
            except OSError:
                continue
        return self._do(
            lambda c: (
                c.execute(
                    "UPDATE jobs SET state='queued', owner=NULL"
                    f" WHERE state='running' AND lease_until < {_NOW}"
                ).rowcount
            )
        )

    def expire(self, now: float | None = None) -> list[str]:
        """Delete finished jobs whose TTL has passed (as :meth:`delete`), and the hidden records
        whose callback was sent since; return the ids of the jobs expired now."""
        now = time.time() if now is None else now
        rows = self._do(
            lambda c: c.execute(f"SELECT id FROM jobs WHERE expires <= %s AND {VISIBLE}", (now,)).fetchall()
        )
        ids = [r["id"] for r in rows]
        for job_id in ids:
            self.delete(job_id)
        self._do(lambda c: c.execute(SWEEP))
        return ids

    # -- reads

    def get(self, job_id: str, *, hidden: bool = False) -> Job | None:
        """The job with its queue position, or None (a deleted job owing its callback too, unless
        ``hidden``: the outbox reads it)."""
        where = "id=%s" if hidden else f"id=%s AND {VISIBLE}"
        row = self._one(f"SELECT {COLUMNS}, {POSITION} FROM jobs WHERE {where}", (job_id,))
        return None if row is None else _job(row, row.pop("position"))

    def jobs(self, q: JobQuery) -> list[Job]:
        """The jobs of one page of ``GET /v1/jobs`` over all replicas, newest first."""
        sql, args = select(q, "%s", COLUMNS)
        rows = self._do(lambda c: c.execute(sql, args).fetchall())
        return [_job(r, r.pop("position")) for r in rows]

    def counts(self) -> dict[str, int]:
        """Jobs per state over all replicas (every state present, 0 when none)."""
        rows = self._do(
            lambda c: c.execute(
                f"SELECT state, COUNT(*) AS n FROM jobs WHERE {VISIBLE} GROUP BY state"
            ).fetchall()
        )
        out = dict.fromkeys(STATES, 0)
        out.update({r["state"]: r["n"] for r in rows})
        return out

    def page_runs(self, job_id: str | None = None) -> list[tuple[str, int, str]]:
        """``(job_id, page, boot)`` for every page computed (all jobs, or one), in insertion order."""
        sql, args = "SELECT job_id, page, boot FROM page_runs", ()
        if job_id is not None:
            sql, args = sql + " WHERE job_id=%s", (job_id,)
        rows = self._do(lambda c: c.execute(sql + " ORDER BY at", args).fetchall())
        return [(r["job_id"], r["page"], r["boot"]) for r in rows]


def _job(row: dict, position: int | None = None) -> Job:
    data = dict(row)
    data["options"] = json.loads(data["options"])
    data["webhook"] = json.loads(data["webhook"]) if data["webhook"] else None
    return Job(**data, position=position)
