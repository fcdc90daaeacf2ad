"""The service's data dir running full (issue 25 item 3): named as the server's problem, survived.

Before, with ``--data-dir`` full an upload answered ``400 malformed multipart body`` (blaming the
client), a worker thread died on SQLite's "database or disk is full" leaving its job ``running``
and the rest ``queued`` forever, and ``/ready`` kept answering 200. Here:

* :func:`is_full` recognises the condition (``OSError`` ``ENOSPC``/``EDQUOT``, SQLite's message);
* :func:`refusal` is the :class:`~ocrstack.core.errors.DiskFull` a request gets (the app answers
  507; the message names the data dir as the server's, never its path);
* :class:`Unfinished` keeps the jobs a full disk stopped, and marks them failed (with the reason)
  as soon as the job database takes the write again, so no job stays ``running``;
* :func:`unwritable` is the readiness probe: why ``--data-dir`` takes no write now, or None.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import sqlite3
import threading
from pathlib import Path

from ocrstack.api.stores import Store
from ocrstack.core.errors import DiskFull

log = logging.getLogger("ocrstack.api")
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
#: The reason and fix a job stopped by a full data dir ends with (failed; submit it again).
JOB_ERROR = "the server's data dir ran out of space while this job was written"
JOB_FIX = "submit it again later; the operator must free space in the service's --data-dir"
#: Bytes the readiness probe writes (and removes) in the data dir.
PROBE_BYTES = 64 * 1024


def is_full(exc: BaseException) -> bool:
    """True for "no space left": ``OSError`` ENOSPC/EDQUOT or SQLite's "database or disk is full"
    (also when it is the cause or context of ``exc``)."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
            return True
        if isinstance(exc, sqlite3.OperationalError) and "database or disk is full" in str(exc):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def refusal(what: str) -> DiskFull:
    """The error a request gets when the data dir is full while ``what`` (e.g. "storing the upload")."""
    return DiskFull(
        f"the server's data dir is full (no space left while {what})",
        "retry later; the operator must free space in the service's --data-dir",
    )


class Unfinished:
    """Jobs a full disk stopped, to be marked failed once the job database takes writes again."""

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._lock = threading.Lock()

    def add(self, store: Store, job_id: str) -> None:
        """Mark ``job_id`` failed now, or keep it for :meth:`retry` when the store cannot write."""
        with self._lock:
            self._ids.add(job_id)
        self.retry(store)

    def retry(self, store: Store) -> None:
        """Try again to mark every kept job failed with :data:`JOB_ERROR` (a still-full disk: later)."""
        with self._lock:
            ids = sorted(self._ids)
        for job_id in ids:
            try:
                store.finish(job_id, "failed", done=0, error=JOB_ERROR, fix=JOB_FIX)
            except Exception as exc:
                if not is_full(exc):
                    raise
                log.error("job %s not marked failed yet: the data dir is still full", job_id)
                return
            log.error("job %s failed: %s", job_id, JOB_ERROR)
            with self._lock:
                self._ids.discard(job_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._ids)


def probe(data_dir: Path) -> None:
    """Write, flush and remove :data:`PROBE_BYTES` in ``data_dir`` (the seam tests replace)."""
    path = data_dir / f".ready-{secrets.token_hex(4)}"
    try:
        with open(path, "wb") as fh:
            fh.write(b"\0" * PROBE_BYTES)
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        path.unlink(missing_ok=True)


def unwritable(data_dir: Path) -> str | None:
    """Why the data dir takes no write now (one line without its path), or None when it does."""
    try:
        probe(data_dir)
    except OSError as exc:
        return f"the server's data dir takes no writes ({os.strerror(exc.errno) if exc.errno else exc})"
    return None
