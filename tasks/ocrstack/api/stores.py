"""The job-store interface the service uses, and :func:`open_store`, which picks the backend.

Two stores satisfy :class:`Store`:

* :class:`ocrstack.api.store.JobStore` (SQLite in ``--data-dir``): the embedded single-node
  default. One process owns the queue; on start it requeues every job left ``running``.
* :class:`ocrstack.api.postgres.PostgresJobStore` (``--database postgresql://...`` or
  ``$OCRSTACK_DATABASE_URL``): N replicas share one queue. A worker holds a job by a lease that its
  heartbeat renews; a job whose lease expired (its replica died) is claimed again by any replica,
  which resumes it from the page cache under the shared ``--data-dir``.

Job files (uploads, page caches, results) stay on the file system under ``--data-dir`` in both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ocrstack.api.jobquery import JobQuery
from ocrstack.api.store import POOL_SIZE, Job, JobStore
from ocrstack.core.errors import ConfigError, UsageError

#: Environment variable read when ``--database`` is absent (keeps the DSN out of ``ps`` output).
DATABASE_ENV = "OCRSTACK_DATABASE_URL"
SCHEMES = ("postgresql://", "postgres://")


class Store(Protocol):
    """What the app and the worker need from a job store (shapes as in :class:`JobStore`)."""

    data_dir: Path
    ttl: float
    boot: str
    #: Lease seconds (a heartbeat must renew a running job's claim), or None without leases.
    lease: float | None

    def close(self) -> None:
        """Release the connection(s)."""

    def job_dir(self, job_id: str) -> Path:
        """``jobs/<id>`` under the data dir."""

    def out_dir(self, job_id: str) -> Path:
        """The job's output directory (page cache and results)."""

    def upload_tmp(self) -> Path:
        """A fresh path for a streaming upload."""

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
        """Queue a job, moving ``upload`` into it; raises QueueFull when the queue is full."""

    def claim(self) -> Job | None:
        """The oldest claimable job, now ``running`` and held by this store (None: nothing to do)."""

    def heartbeat(self, job_id: str) -> str:
        """Renew the claim: ``held``, ``cancelled`` (stop and drop the files) or ``lost`` (stop only)."""

    def progress(self, job_id: str, done: int) -> None:
        """Set pages done of a job this store holds."""

    def page_ran(self, job_id: str, page: int) -> None:
        """Record one computed (not cached) 0-based page."""

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
        """End a held running job; False when it was not held (cancelled, or taken over)."""

    def claim_callback(self, hold: float) -> Job | None:
        """Hold the oldest owed callback for ``hold`` s (:mod:`ocrstack.api.callbackrows`); its job."""

    def hold_callback(self, job_id: str, hold: float, *, claim: int) -> bool:
        """Renew the hold of ``claim`` (the claimed job's ``webhook_claims``) on a callback; False
        when another sender took it over."""

    def webhook_done(self, job_id: str, record: dict, *, claim: int) -> bool:
        """Record the delivery of a callback ``claim`` holds; False when it no longer holds it."""

    def release_callback(self, job_id: str, *, claim: int) -> bool:
        """Hand back (``pending``) the callback this store's ``claim`` holds; False when not held."""

    def cancel(self, job_id: str) -> str | None:
        """Cancel a queued/running job; the state before, None when unknown."""

    def delete(self, job_id: str) -> None:
        """Delete the job's records and files (a record whose callback is owed stays, hidden,
        until the outbox settles it: :mod:`ocrstack.api.callbackrows`)."""

    def recover(self) -> int:
        """Requeue jobs whose worker died; the count."""

    def expire(self, now: float | None = None) -> list[str]:
        """Delete finished jobs past their TTL (as :meth:`delete`) and the hidden records whose
        callback settled; the ids of the jobs expired."""

    def get(self, job_id: str, *, hidden: bool = False) -> Job | None:
        """The job with its queue position, or None (also for a deleted job's hidden record,
        unless ``hidden``)."""

    def jobs(self, q: JobQuery) -> list[Job]:
        """One page of the job list, newest first, with queue positions (``q.limit`` + 1 at most:
        the extra one says another page follows; :mod:`ocrstack.api.jobquery`)."""

    def counts(self) -> dict[str, int]:
        """Jobs per state (every state present)."""

    def page_runs(self, job_id: str | None = None) -> list[tuple[str, int, str]]:
        """``(job_id, page, boot)`` for every computed page."""


def is_postgres(database: str | None) -> bool:
    """True for a ``postgresql://`` / ``postgres://`` URL.

    Raises:
        UsageError: any other non-empty value (the message never repeats it: it may hold a password).
    """
    if not database or database == "sqlite":
        return False
    if database.startswith(SCHEMES):
        return True
    raise UsageError(
        "--database must be a postgresql:// URL (or empty for SQLite in --data-dir)",
        f"use --database postgresql://USER@HOST:5432/DB, ${DATABASE_ENV}, or leave it unset",
    )


def open_store(
    database: str | None,
    data_dir: Path,
    *,
    max_queue: int = 100,
    ttl: float = 86400.0,
    lease: float = 30.0,
    pool: int = POOL_SIZE,
) -> Store:
    """SQLite in ``data_dir`` when ``database`` is empty, else the PostgreSQL store at that URL.

    Args:
        database: ``postgresql://...`` (never logged, never in an error message) or None/"".
        lease: seconds a PostgreSQL claim lasts without a heartbeat (ignored for SQLite).
        pool: most PostgreSQL connections of this store (ignored for SQLite).

    Raises:
        UsageError: not a PostgreSQL URL. ConfigError: psycopg is not installed.
        StoreUnavailable: the database does not answer.
    """
    if not is_postgres(database):
        return JobStore(data_dir, max_queue=max_queue, ttl=ttl)
    try:
        from ocrstack.api.postgres import PostgresJobStore
    except ImportError as exc:
        raise ConfigError(
            f"--database postgresql://... needs psycopg ({exc.name} is not installed)",
            "pip install 'ocrstack[api]' (it includes psycopg[binary])",
        ) from None
    assert database is not None
    return PostgresJobStore(database, data_dir, max_queue=max_queue, ttl=ttl, lease=lease, pool=pool)
