"""The callback outbox in the job stores (issue 23 item 4): the rows' states and their SQL.

A callback is recorded before it is sent, so no replica's death can lose it (the transactional
outbox of https://microservices.io/patterns/data/transactional-outbox.html):

* ``finish`` of a job that names ``callback_url`` sets ``webhook_state = 'pending'`` in the same
  UPDATE that ends the job (:data:`ON_FINISH`): the job ends with its callback owed, or not at all;
* a sender (:class:`ocrstack.api.outbox.Outbox`, in any replica) claims the oldest owed callback:
  ``pending``, or ``sending`` whose hold ran out (its replica died mid-delivery), and holds it
  (``webhook_owner`` = the store's ``boot``, ``webhook_until``), renewing the hold before each attempt;
* the outcome is written only while the sender still holds it (``webhook_done``): ``delivered`` or
  ``failed`` with the delivery record in ``webhook``. "Holds" means this claim: ``webhook_claims``
  counts the claims and is the fencing token, so a sender whose hold ran out and was taken over
  by another sender of the same replica (same ``webhook_owner``) learns it too;
* a sender stopped mid-delivery (SIGTERM: :meth:`ocrstack.api.outbox.Outbox.stop`) before its POST
  answered hands the callback back (``release_callback``: ``pending`` again, fenced as above), so
  another sender takes it at once instead of when the hold runs out.

So a callback is delivered at least once per job end; a receiver sees it twice only when a replica
died between the receiver's receipt and the record, or stopped before the answer came (receivers
dedupe on the body's ``id``).

A job deleted (``DELETE /v1/jobs/{id}``) or expired while its callback is owed loses its files at
once, but its row stays, hidden from every read of the API (``deleted`` set; :data:`VISIBLE`), so
the callback is still sent (from the row: its ``result_url`` then names a deleted job); the sender
that settles it removes the row, or else the next ``expire`` does (:data:`SWEEP`).

States: NULL (no callback, or the job has not ended) -> ``pending`` -> ``sending`` ->
``delivered`` | ``failed``. SQLite (one process) hands a ``sending`` row back to ``pending`` on
start (:data:`SQLITE_RECOVER`); PostgreSQL replicas take it over when its hold has passed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

PENDING, SENDING = "pending", "sending"
#: The SET clause ``finish`` adds: a job naming a callback ends with it owed.
ON_FINISH = "webhook_state = CASE WHEN callback IS NULL THEN NULL ELSE 'pending' END"
#: The callback columns of ``jobs`` with their SQLite types: a ``jobs.sqlite3`` written by an
#: ocrstack from before webhooks lacks them, and the store adds them on open.
SQLITE_COLUMNS = {
    "callback": "TEXT",
    "webhook": "TEXT",
    "webhook_state": "TEXT",
    "webhook_owner": "TEXT",
    "webhook_until": "REAL",
    "webhook_claims": "INTEGER NOT NULL DEFAULT 0",
    "deleted": "REAL",
}
SQLITE_INDEX = (
    "CREATE INDEX IF NOT EXISTS jobs_outbox ON jobs(seq) WHERE webhook_state IN ('pending','sending')"
)
#: On a SQLite store's open, as PostgreSQL migration 0005 does (its comment says why): a job that
#: ended naming a callback without an outbox state (written before the outbox, which kept only the
#: record of a delivery that ended) owes it, unless its record says it ended.
SQLITE_OWED = (
    "UPDATE jobs SET webhook_owner=NULL, webhook_until=NULL, webhook_state=CASE WHEN NOT json_valid(webhook)"
    " THEN 'pending' WHEN json_extract(webhook, '$.state') IN ('delivered','failed')"
    " THEN json_extract(webhook, '$.state') ELSE 'pending' END"
    " WHERE callback IS NOT NULL AND state IN ('done','partial','failed')"
    " AND (webhook_state IS NULL OR webhook_state NOT IN ('pending','sending','delivered','failed')"
    " OR (webhook_state='sending' AND webhook_until IS NULL))"
)
#: On a SQLite store's start: sends of the previous process died with it.
SQLITE_RECOVER = "UPDATE jobs SET webhook_state='pending', webhook_owner=NULL WHERE webhook_state='sending'"
_OWED = "webhook_state='pending' OR (webhook_state='sending' AND webhook_until < {now})"
_PG_NOW = "EXTRACT(EPOCH FROM clock_timestamp())"
#: The callback of job ``id`` is held by this store's claim number ``webhook_claims``.
_HELD = "id={p} AND webhook_owner={p} AND webhook_state='sending' AND webhook_claims={p}"
_RELEASE = "UPDATE jobs SET webhook_state='pending', webhook_owner=NULL, webhook_until=NULL"
#: The rows the API's reads see (``get``, the list, the counts): not those of deleted jobs.
VISIBLE = "deleted IS NULL"
_SETTLED = "COALESCE(webhook_state, '') NOT IN ('pending','sending')"
#: ``delete`` of a job, after its files (``{p}``: the placeholder): its row is hidden while its
#: callback is owed (arguments: unix seconds now, id), else removed (id); in this order, so a
#: callback settled meanwhile leaves no hidden row behind.
HIDE = "UPDATE jobs SET deleted={p} WHERE id={p} AND webhook_state IN ('pending','sending')"
DROP = "DELETE FROM jobs WHERE id={p} AND " + _SETTLED
#: ``expire``: the hidden rows whose callback settled (their sender could not remove them).
SWEEP = "DELETE FROM jobs WHERE deleted IS NOT NULL AND " + _SETTLED
#: The sender that settled the callback of a deleted job removes its row.
_GONE = "DELETE FROM jobs WHERE id={p} AND deleted IS NOT NULL"


class SqliteCallbacks:
    """The outbox methods of :class:`ocrstack.api.store.JobStore` (its ``_db``, ``_lock``, ``boot``)."""

    _db: Any
    _lock: Any
    boot: str
    get: Callable[..., Any]  # the store's

    def claim_callback(self, hold: float) -> Any:
        """Hold the oldest owed callback for ``hold`` seconds; its job (None: none is owed)."""
        now = time.time()
        with self._lock:
            row = self._db.execute(
                "UPDATE jobs SET webhook_state='sending', webhook_owner=?, webhook_until=?,"
                " webhook_claims=webhook_claims+1 WHERE seq = (SELECT seq FROM jobs WHERE "
                + _OWED.format(now="?")
                + " ORDER BY seq LIMIT 1) RETURNING id",
                (self.boot, now + hold, now),
            ).fetchone()
        return self.get(row["id"], hidden=True) if row else None

    def hold_callback(self, job_id: str, hold: float, *, claim: int) -> bool:
        """Renew the hold of this store's ``claim`` (the claimed job's ``webhook_claims``) on the
        callback of ``job_id`` for ``hold`` s; False: not held (taken over, or the job is gone)."""
        with self._lock:
            cur = self._db.execute(
                f"UPDATE jobs SET webhook_until=? WHERE {_HELD.format(p='?')}",
                (time.time() + hold, job_id, self.boot, claim),
            )
        return cur.rowcount > 0

    def release_callback(self, job_id: str, *, claim: int) -> bool:
        """Hand back the callback of ``job_id`` while this store's ``claim`` holds it: ``pending``,
        for any sender to claim now (its sender stopped before an answer); False when not held."""
        with self._lock:
            cur = self._db.execute(f"{_RELEASE} WHERE {_HELD.format(p='?')}", (job_id, self.boot, claim))
        return cur.rowcount > 0

    def webhook_done(self, job_id: str, record: dict, *, claim: int) -> bool:
        """Record the outcome of a callback this store's ``claim`` holds (``record["state"]``:
        ``delivered`` or ``failed``; :func:`ocrstack.api.webhooks.deliver`); False when not held.
        The row of a deleted job goes with it."""
        with self._lock:
            cur = self._db.execute(
                f"UPDATE jobs SET webhook=?, webhook_state=?, webhook_until=NULL WHERE {_HELD.format(p='?')}",
                (json.dumps(record), record["state"], job_id, self.boot, claim),
            )
            if cur.rowcount > 0:
                self._db.execute(_GONE.format(p="?"), (job_id,))
        return cur.rowcount > 0


class PostgresCallbacks:
    """The outbox methods of :class:`ocrstack.api.postgres.PostgresJobStore` (holds on the database
    clock, so replicas' clocks need not agree; ``SKIP LOCKED``: two replicas never claim one row)."""

    boot: str
    get: Callable[..., Any]  # the store's
    _one: Callable[..., dict | None]  # the store's: one row of one statement

    def claim_callback(self, hold: float) -> Any:
        """Hold the oldest owed callback for ``hold`` seconds; its job (None: none is owed)."""
        row = self._one(
            f"UPDATE jobs SET webhook_state='sending', webhook_owner=%(owner)s,"
            f" webhook_until={_PG_NOW} + %(hold)s, webhook_claims=webhook_claims+1"
            " WHERE seq = (SELECT seq FROM jobs WHERE "
            + _OWED.format(now=_PG_NOW)
            + " ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id",
            {"owner": self.boot, "hold": hold},
        )
        return self.get(row["id"], hidden=True) if row else None

    def hold_callback(self, job_id: str, hold: float, *, claim: int) -> bool:
        """Renew the hold of this store's ``claim`` on the callback of ``job_id``; False: not held."""
        row = self._one(
            f"UPDATE jobs SET webhook_until={_PG_NOW} + %s WHERE {_HELD.format(p='%s')} RETURNING id",
            (hold, job_id, self.boot, claim),
        )
        return row is not None

    def release_callback(self, job_id: str, *, claim: int) -> bool:
        """Hand back the callback this store's ``claim`` holds (``pending``); False when not held."""
        row = self._one(f"{_RELEASE} WHERE {_HELD.format(p='%s')} RETURNING id", (job_id, self.boot, claim))
        return row is not None

    def webhook_done(self, job_id: str, record: dict, *, claim: int) -> bool:
        """Record the outcome of a callback this store's ``claim`` holds; False when not held.
        The row of a deleted job goes with it."""
        row = self._one(
            f"UPDATE jobs SET webhook=%s, webhook_state=%s, webhook_until=NULL WHERE {_HELD.format(p='%s')}"
            " RETURNING deleted",
            (json.dumps(record), record["state"], job_id, self.boot, claim),
        )
        if row is not None and row["deleted"] is not None:
            self._one(_GONE.format(p="%s") + " RETURNING id", (job_id,))
        return row is not None
