"""The files half of every job store: ``jobs/<id>/`` and ``uploads/`` under the data directory
(the layout: :mod:`ocrstack.api.store`); the rows are the SQLite or PostgreSQL store's."""

from __future__ import annotations

import secrets
from pathlib import Path


class JobFiles:
    """The files half of every store: ``jobs/<id>/`` and ``uploads/`` under ``data_dir``.

    Args:
        data_dir: created when missing (shared storage when replicas share a database).
        max_queue: jobs that may be queued or running at once; more -> :class:`ocrstack.api.store.QueueFull`.
        ttl: seconds a finished job (and its files) is kept.
    """

    #: Seconds a worker's claim on a job lasts without a heartbeat; None: no leases (one process).
    lease: float | None = None

    def __init__(self, data_dir: Path, max_queue: int = 100, ttl: float = 86400.0) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "jobs").mkdir(exist_ok=True)
        (self.data_dir / "uploads").mkdir(exist_ok=True)
        self.max_queue = max_queue
        self.ttl = ttl
        #: This process's id in ``page_runs`` (and its lease owner name in PostgreSQL).
        self.boot = secrets.token_hex(4)

    def job_dir(self, job_id: str) -> Path:
        """``jobs/<id>``; ``job_id`` comes from :func:`secrets.token_hex` only (checked)."""
        if not job_id.isalnum():
            raise ValueError(f"bad job id {job_id!r}")
        return self.data_dir / "jobs" / job_id

    def out_dir(self, job_id: str) -> Path:
        """The job's output directory (what ``ocrstack parse -o`` would be)."""
        return self.job_dir(job_id) / "out"

    def upload_tmp(self) -> Path:
        """A fresh temporary path for a streaming upload (moved into a job when accepted)."""
        return self.data_dir / "uploads" / f"{secrets.token_hex(8)}.part"
