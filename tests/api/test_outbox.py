"""The callback senders (``ocrstack.api.outbox``) on a SQLite store with a local receiver: a
callback that cannot be sent, or a store error while recording one, costs that callback an
attempt, never the sender thread (which would leave every later callback of the replica owed);
a sender whose hold was taken over stops at its next retry; a deleted job's callback is still sent;
a stop hands back a callback whose POST has not answered, and records one that has."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from api.test_callbackrows import add
from api.test_webhooks import SECRET, Receiver
from ocrstack.api import webhooks
from ocrstack.api.outbox import Outbox
from ocrstack.api.store import JobStore
from support.wait import wait_until


def ended(store: JobStore, callback: str) -> str:
    """A job that ended ``done`` owing its callback to ``callback``."""
    job_id = add(store, callback)
    assert store.claim() is not None and store.finish(job_id, "done", done=1)
    return job_id


def recorded(store: JobStore, job_id: str) -> dict | None:
    return store.get(job_id).webhook


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_a_callback_that_cannot_be_sent_fails_and_the_next_is_delivered(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    with Receiver() as rx:
        bad = ended(store, "http://127.0.0.1:9/h\x00")  # stored before the URL check refused these
        good = ended(store, rx.url)
        outbox = Outbox(store, SECRET, senders=1, backoff=0.01, poll=0.05, hosts=(rx.host, "127.0.0.1:9"))
        outbox.start()
        try:
            wait_until(lambda: recorded(store, good), "the second callback recorded", timeout=15)
        finally:
            outbox.stop()
    assert recorded(store, good)["state"] == "delivered"
    assert (recorded(store, bad)["state"], recorded(store, bad)["attempts"]) == ("failed", 0)
    assert "must be an http" in recorded(store, bad)["error"]
    assert [json.loads(body)["id"] for _, body in rx.requests] == [good]


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_a_sender_outlives_a_store_error_while_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JobStore(tmp_path / "data")
    store.lease = 0.5  # holds of 1 s: the callback whose record failed is claimed again soon
    record = store.webhook_done
    failures = [sqlite3.OperationalError("database or disk is full")]

    def webhook_done(job_id: str, rec: dict, **kw: object) -> bool:
        if failures:
            raise failures.pop()
        return record(job_id, rec, **kw)

    monkeypatch.setattr(store, "webhook_done", webhook_done)
    with Receiver() as rx:
        job = ended(store, rx.url)
        outbox = Outbox(store, SECRET, senders=1, backoff=0.01, poll=0.05, hosts=(rx.host,))
        outbox.start()
        try:
            final = wait_until(lambda: recorded(store, job), "the callback recorded", timeout=15)
        finally:
            outbox.stop()
    assert (final["state"], final["claims"]) == ("delivered", 2)  # sent again: at least once
    assert len(rx.requests) == 2


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_a_sender_whose_hold_a_sibling_took_over_stops_at_its_next_retry(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    with Receiver((503,)) as rx:
        job = ended(store, rx.url)
        outbox = Outbox(store, SECRET, backoff=0.01, hosts=(rx.host,))
        first = store.claim_callback(60)
        with sqlite3.connect(tmp_path / "data" / "jobs.sqlite3") as db:  # its hold ran out mid-POST
            db.execute("UPDATE jobs SET webhook_until = webhook_until - 3600 WHERE id=?", (job,))
        second = store.claim_callback(60)  # the replica's other sender thread takes it over
        assert (first.webhook_claims, second.webhook_claims) == (1, 2)
        assert outbox.send(first) is None  # its 503 answered, it learns it lost the hold: no retry
        assert outbox.send(second)["state"] == "delivered"
    assert recorded(store, job)["claims"] == 2
    assert len(rx.requests) == 2  # the 503 and the delivery, not a third POST from the first sender


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_a_host_the_operator_removed_gets_no_owed_callback(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    with Receiver() as rx:
        job = ended(store, rx.url)  # accepted while rx.host was allowed
        outbox = Outbox(store, SECRET, backoff=0.01, hosts=("hooks.example",))  # restarted without it
        record = outbox.send(store.claim_callback(60))
    assert record is not None and (record["state"], record["attempts"]) == ("failed", 0)
    assert "not allowed" in record["error"] and recorded(store, job)["state"] == "failed"
    assert rx.requests == []  # no request to a host this replica does not allow


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_a_job_deleted_before_its_callback_was_sent_still_gets_it_sent(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    with Receiver() as rx:
        job = ended(store, rx.url)
        store.delete(job)  # DELETE /v1/jobs/{id} of the finished job, before any sender ran
        assert store.get(job) is None and not store.job_dir(job).exists()
        outbox = Outbox(store, SECRET, senders=1, backoff=0.01, poll=0.05, hosts=(rx.host,))
        outbox.start()
        try:
            wait_until(lambda: rx.requests, "the deleted job's callback", timeout=5)
            wait_until(lambda: store.get(job, hidden=True) is None, "its row removed once sent", timeout=5)
        finally:
            outbox.stop()
    body = json.loads(rx.requests[0][1])
    assert (body["id"], body["status"], body["result_url"]) == (job, "done", f"/v1/jobs/{job}/result")
    assert len(rx.requests) == 1


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_a_stop_mid_post_hands_the_callback_back_for_the_next_sender(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    release = threading.Event()
    with Receiver(stall=release) as rx:
        job = ended(store, rx.url)
        first = Outbox(store, SECRET, senders=1, backoff=0.01, poll=0.05, hosts=(rx.host,))
        first.start()
        wait_until(lambda: rx.requests, "the callback's POST in flight", timeout=5)
        started = time.monotonic()
        first.stop()  # SIGTERM while the receiver has not answered
        took = time.monotonic() - started
        assert store.get(job).webhook_state == "pending" and took < 2.0, took  # not held ~40 s
        release.set()
        after = Outbox(store, SECRET, senders=1, backoff=0.01, poll=0.05, hosts=(rx.host,))
        after.start()  # another replica, or the next start
        try:
            final = wait_until(lambda: recorded(store, job), "the callback recorded", timeout=5)
        finally:
            after.stop()
    assert (final["state"], final["claims"], len(rx.requests)) == ("delivered", 2, 2)


@pytest.mark.server  # a local receiver on 127.0.0.1
def test_a_stop_after_the_receiver_answered_records_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JobStore(tmp_path / "data")
    deliver = webhooks.deliver
    with Receiver() as rx:
        job = ended(store, rx.url)
        outbox = Outbox(store, SECRET, backoff=0.01, hosts=(rx.host,))

        def answered_then_stopped(*args: object, **kw: object) -> dict | None:
            record = deliver(*args, **kw)
            outbox.stop()  # SIGTERM after the answer, before it is recorded
            return record

        monkeypatch.setattr(webhooks, "deliver", answered_then_stopped)
        record = outbox.send(store.claim_callback(60))
    assert record is not None and record["state"] == "delivered"
    assert recorded(store, job)["state"] == "delivered" and len(rx.requests) == 1
