"""``GET /v1/jobs`` on the request side: its parameters as a :class:`~ocrstack.api.jobquery.JobQuery`
(checked, 400 with the fix otherwise) and a store's answer cut into a page with its next cursor.
"""

from __future__ import annotations

from collections.abc import Iterable

from ocrstack.api.jobquery import JobQuery
from ocrstack.api.store import STATES, Job
from ocrstack.core.errors import UsageError


def query(status: Iterable[str] | None, since: float | None, cursor: str | None, limit: int) -> JobQuery:
    """The :class:`JobQuery` of a request's parameters (``status`` repeated or comma-separated).

    Raises:
        UsageError: an unknown status, or a cursor this service did not hand out (400).
    """
    wanted = tuple(dict.fromkeys(s.strip() for item in status or () for s in item.split(",") if s.strip()))
    unknown = [s for s in wanted if s not in STATES]
    if unknown:
        raise UsageError(f"status {unknown[0]!r} is not a job status", f"use one of: {', '.join(STATES)}")
    before = None
    if cursor:
        if not cursor.isdigit():
            raise UsageError(
                f"cursor {cursor[:40]!r} is not one this service hands out",
                "pass the next_cursor of the previous page, or leave cursor out for the newest jobs",
            )
        before = int(cursor)
    return JobQuery(statuses=wanted, since=since, before=before, limit=limit)


def page(jobs: list[Job], q: JobQuery) -> tuple[list[Job], str | None]:
    """The first ``q.limit`` of ``jobs`` (a store's answer to ``q``, which holds one more when
    another page follows) and the cursor of the next page (None on the last page)."""
    more = len(jobs) > q.limit
    jobs = jobs[: q.limit]
    return jobs, (str(jobs[-1].seq) if more and jobs else None)
