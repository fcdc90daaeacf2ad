"""Callback senders: threads that deliver the callbacks owed in the job store (issue 23 item 4).

Every replica with a ``--webhook-secret`` runs :data:`SENDERS` of them. Each claims the oldest owed
callback (:meth:`ocrstack.api.stores.Store.claim_callback`: one the job's end left ``pending``, or
one whose sender died mid-delivery), POSTs it (:func:`ocrstack.api.webhooks.deliver`), renewing its
hold before each retry, and records the outcome in the job. A worker that finishes a job wakes them;
otherwise they look every :data:`POLL` seconds, which is how a callback left by a killed replica
is picked up by another.

A sender posts only to a host this replica allows (``--webhook-host``, checked again at sending:
an operator who removes a host stops the callbacks already owed to it; they are recorded failed).

On stop (:meth:`Outbox.stop`, SIGTERM), a sender whose POST has not answered abandons it and hands
the callback back (``pending``, only while it still holds that claim), so another replica, or the
next start, sends it at once instead of when the hold runs out; an answer already had is recorded.

The hold on a callback lasts the next attempt (its wait and its ``timeout``) plus ``margin``: the
store's lease (``--lease-seconds``) or :data:`MARGIN`; a POST may take ``min(10 s, margin)``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from ocrstack.api import webhooks
from ocrstack.api.store import StoreUnavailable
from ocrstack.api.stores import Store
from ocrstack.core.errors import UsageError

log = logging.getLogger("ocrstack.api")
#: Sender threads per replica (callbacks delivered at once).
SENDERS = 2
#: Seconds between looks for owed callbacks (a local job end wakes the senders at once).
POLL = 1.0
#: Seconds a hold outlasts its attempt when the store has no leases (SQLite).
MARGIN = 30.0
#: Seconds one POST may take at most (:func:`ocrstack.api.webhooks.deliver`'s ``timeout``).
TIMEOUT = 10.0
#: Claims after which a callback is recorded ``failed`` without another POST (replicas that keep
#: dying while they deliver it).
MAX_CLAIMS = 3


class Outbox:
    """:data:`SENDERS` daemon threads delivering the owed callbacks of ``store`` signed with ``secret``.

    Args:
        hosts: the hosts this replica may post to (``--webhook-host``; :func:`webhooks.check_url`).
        metrics: counts recorded outcomes (``ocrstack_callbacks_total``), or None.
        backoff: first wait between attempts, in seconds (doubling).
        poll: seconds between looks for owed callbacks.
    """

    def __init__(
        self,
        store: Store,
        secret: str,
        metrics: Any | None = None,
        *,
        hosts: Sequence[str],
        senders: int = SENDERS,
        backoff: float = 0.5,
        poll: float = POLL,
    ) -> None:
        self.store, self.secret, self.metrics, self.hosts = store, secret, metrics, tuple(hosts)
        self.senders, self.backoff, self.poll = senders, backoff, poll
        self.margin = store.lease or MARGIN
        self.timeout = min(TIMEOUT, self.margin)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start the sender threads."""
        for i in range(self.senders):
            t = threading.Thread(target=self._loop, name=f"ocrstack-callback-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def wake(self) -> None:
        """A job ended here: look for owed callbacks now."""
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the senders, waiting up to ``timeout`` s for each: a delivery without an answer yet
        is abandoned within :data:`webhooks.CHECK` s and handed back, one that answered is recorded."""
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                job = self.store.claim_callback(self.timeout + self.margin)
            except StoreUnavailable as exc:
                log.warning("callbacks not claimed: %s", exc.message)
                job = None
            except Exception:  # a sender that died here would leave every later callback owed
                log.exception("callbacks not claimed")
                job = None
            if job is None:
                self._wake.wait(self.poll)
                self._wake.clear()
                continue
            try:
                self.send(job)
            except StoreUnavailable as exc:  # the hold runs out; a sender claims it again
                log.warning("callback of job %s not recorded: %s", job.id, exc.message)
            except Exception:  # as above (disk full, a bug): the hold runs out, MAX_CLAIMS bounds it
                log.exception("callback of job %s not recorded", job.id)

    def send(self, job: Any) -> dict | None:
        """Deliver the callback of ``job`` (claimed by this store) and record it.

        Returns:
            The delivery record (``webhooks.deliver``'s, plus ``claims``), or None when another
            sender (of any replica) took the callback over meanwhile (it records its own), or when
            the outbox stopped before an answer (the callback is handed back).
        """
        claim = job.webhook_claims  # this sender's fencing token (callbackrows)
        refused = None
        try:
            webhooks.check_url(job.callback, self.hosts)
        except UsageError as exc:
            refused = f"{exc.message} (checked again at sending)"
        if claim > MAX_CLAIMS:
            refused = f"given up after {MAX_CLAIMS} senders stopped mid-delivery"
        if refused is not None:
            record: dict | None = {
                "state": "failed",
                "attempts": 0,
                "status": None,
                "error": refused,
                "at": time.time(),
            }
        else:
            record = webhooks.deliver(
                job.callback,
                webhooks.payload(job),
                self.secret,
                backoff=self.backoff,
                timeout=self.timeout,
                keep=lambda seconds: self.store.hold_callback(job.id, seconds + self.margin, claim=claim),
                abandon=self._stop.is_set,
            )
        if record is None and self._stop.is_set() and self.store.release_callback(job.id, claim=claim):
            log.info("job %s callback handed back on stop (unanswered): another sender takes it", job.id)
            return None
        if record is None:
            log.warning("job %s callback was taken over by another sender (or the job deleted)", job.id)
            return None
        record["claims"] = claim
        if not self.store.webhook_done(job.id, record, claim=claim):
            log.warning("job %s callback was taken over by another sender; not recorded here", job.id)
            return None
        if self.metrics is not None:
            self.metrics.callbacks.labels(record["state"]).inc()
        log.info("job %s callback %s after %d attempt(s)", job.id, record["state"], record["attempts"])
        return record
