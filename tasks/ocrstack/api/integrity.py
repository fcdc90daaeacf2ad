"""Refuse to start on a damaged SQLite job database (issue 25 item 6).

Before, damaged pages in ``jobs.sqlite3`` let the service start and say it was ready while every
call answered 500 and the worker thread was dead; other damage ended in a raw traceback, and a
0-byte database started empty, orphaning the old jobs' files. :func:`check` runs when the store
opens: a file that is no SQLite database, one whose ``PRAGMA quick_check`` finds damage, or an
empty file beside existing job directories raises :class:`DatabaseDamaged` (the CLI prints its one
line and exits 9), so the operator moves it aside or restores it before jobs are lost silently.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ocrstack.core.errors import ConfigError


class DatabaseDamaged(ConfigError):
    """The job database cannot be trusted; the service does not start (exit 9)."""


def _damaged(db: Path, why: str) -> DatabaseDamaged:
    return DatabaseDamaged(
        f"job database {db} is damaged ({why})",
        f"stop the service and move it aside (mv {db} {db}.damaged) to start with an empty queue, "
        "or restore it from a backup",
    )


def check_file(db: Path, jobs_dir: Path) -> None:
    """Before connecting: an empty ``db`` while ``jobs_dir`` holds jobs was truncated.

    Raises:
        DatabaseDamaged: 0 bytes with job directories beside it (a fresh empty file is fine).
    """
    if db.is_file() and db.stat().st_size == 0 and jobs_dir.is_dir() and any(jobs_dir.iterdir()):
        raise _damaged(db, "0 bytes, but jobs/ holds job directories")


def check(conn: sqlite3.Connection, db: Path) -> None:
    """``PRAGMA quick_check`` on the open connection ``conn`` to ``db``.

    Raises:
        DatabaseDamaged: not a database, or quick_check reports damage (its first finding named,
            at most 100 characters: the whole report can be thousands of lines).
    """
    try:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        raise _damaged(db, str(exc)) from None
    if rows != ["ok"]:
        lines = [x for r in rows for x in str(r).splitlines() if x.strip() and not x.startswith("***")]
        first = lines[0] if lines else "no answer"
        raise _damaged(db, f"quick_check: {first[:100]}")


def opening(db: Path) -> DatabaseDamaged:
    """The error for ``sqlite3.DatabaseError`` raised while the store set up ``db`` (schema, WAL)."""
    return _damaged(db, "it cannot be opened as a SQLite database")
