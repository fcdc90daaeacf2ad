"""One page of ``GET /v1/jobs`` as SQL both job stores run (SQLite ``?``, PostgreSQL ``%s``).

:class:`JobQuery` says which jobs (status, age, cursor, count); :func:`select` writes the query
with the store's placeholder. The request side (parameters, cursors, pages) is
:mod:`ocrstack.api.listing`. Paging is by cursor, not offset: the cursor is the ``seq`` of the
last job of a page and the next page holds the jobs queued before it, so jobs submitted while a
client pages through neither shift nor repeat entries.
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: Jobs per page when the request names no ``limit``, and the most it may name.
DEFAULT_LIMIT, MAX_LIMIT = 50, 200
_POSITION = (
    "CASE WHEN state='queued' THEN"
    " (SELECT COUNT(*) FROM jobs q WHERE q.state='queued' AND q.seq < jobs.seq) END AS position"
)


@dataclasses.dataclass(frozen=True)
class JobQuery:
    """Which jobs one page of the list holds.

    Attributes:
        statuses: only jobs in these states (empty: every state).
        since: only jobs created at or after this time (unix seconds), or None.
        before: only jobs older than this cursor (a job's ``seq``), or None for the newest.
        limit: at most this many jobs.
    """

    statuses: tuple[str, ...] = ()
    since: float | None = None
    before: int | None = None
    limit: int = DEFAULT_LIMIT


def select(q: JobQuery, mark: str, columns: str) -> tuple[str, list[Any]]:
    """``(sql, args)`` selecting ``columns`` of the jobs of ``q`` plus one more (whether another
    page follows), newest first, each with its queue ``position`` (NULL unless queued); ``mark``
    is the driver's placeholder (``?`` or ``%s``)."""
    where, args = [], []
    if q.statuses:
        where.append(f"state IN ({', '.join([mark] * len(q.statuses))})")
        args += q.statuses
    if q.since is not None:
        where.append(f"created >= {mark}")
        args.append(q.since)
    if q.before is not None:
        where.append(f"seq < {mark}")
        args.append(q.before)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    sql = f"SELECT {columns}, {_POSITION} FROM jobs{clause} ORDER BY seq DESC LIMIT {mark}"
    return sql, [*args, q.limit + 1]
