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

from ocrstack.api.callbackrows import VISIBLE

#: Jobs per page when the request names no ``limit``, and the most it may name.
DEFAULT_LIMIT, MAX_LIMIT = 50, 200
#: The queue ``position`` of one job (``GET /v1/jobs/{id}``): the queued jobs before it, counted on
#: the ``jobs_state (state, seq)`` index; NULL unless queued.
POSITION = (
    "CASE WHEN state='queued' THEN"
    " (SELECT COUNT(*) FROM jobs q WHERE q.state='queued' AND q.seq < jobs.seq) END AS position"
)
#: The queue position of every queued job, numbered once per list query (a page joins it) instead
#: of one count per listed row (:data:`POSITION` on each of up to ``MAX_LIMIT`` + 1 rows).
_QUEUE = "(SELECT seq, ROW_NUMBER() OVER (ORDER BY seq) - 1 AS position FROM jobs WHERE state='queued') queue"


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
    is the driver's placeholder (``?`` or ``%s``). ``columns`` are unqualified names of ``jobs``
    (``seq`` is the join column, so it stays unambiguous)."""
    where, args = [VISIBLE], []  # not the rows deleted jobs keep for their callbacks
    if q.statuses:
        where.append(f"state IN ({', '.join([mark] * len(q.statuses))})")
        args += q.statuses
    if q.since is not None:
        where.append(f"created >= {mark}")
        args.append(q.since)
    if q.before is not None:
        where.append(f"seq < {mark}")
        args.append(q.before)
    clause = f" WHERE {' AND '.join(where)}"
    sql = f"SELECT {columns}, queue.position FROM jobs LEFT JOIN {_QUEUE} USING (seq){clause}"
    sql += f" ORDER BY seq DESC LIMIT {mark}"
    return sql, [*args, q.limit + 1]
