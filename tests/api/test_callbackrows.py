"""The callback outbox in both job stores: a job's end leaves its callback owed in the same write,
one sender holds it at a time, a hold that runs out (its sender died) is taken over, and only the
holder records the outcome (the holding claim: another sender of the same replica is not it); a job
deleted or expired while its callback is owed is gone for the API but its callback is still sent."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ocrstack.api import webhooks
from ocrstack.api.jobquery import JobQuery
from ocrstack.api.store import JobStore
from ocrstack.api.stores import Store

HOOK = "http://127.0.0.1:9/h"


def add(store: Store, callback: str | None) -> str:
    path = store.upload_tmp()
    path.write_bytes(b"%PDF-1.4 x")
    return store.create(
        upload=path, name="a.pdf", filename="a.pdf", options={}, pages_total=1, callback=callback
    ).id


def sqlite_pair(tmp_path: Path) -> tuple[Store, Store, Callable[[str], None]]:
    """Two stores on one ``jobs.sqlite3`` (two senders), and how a hold runs out."""
    return JobStore(tmp_path / "data"), JobStore(tmp_path / "data"), sqlite_run_out(tmp_path)


def sqlite_run_out(tmp_path: Path) -> Callable[..., None]:
    """``run_out(job_id)``: its hold runs out; ``run_out(job_id, sql)``: run ``sql`` (``?``: the id)."""

    def run_out(
        job_id: str, sql: str = "UPDATE jobs SET webhook_until = webhook_until - 3600 WHERE id=?"
    ) -> None:
        with sqlite3.connect(tmp_path / "data" / "jobs.sqlite3") as db:
            db.execute(sql, (job_id,))

    return run_out


@pytest.fixture(params=["sqlite", "postgresql"])
def pair(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        yield sqlite_pair(tmp_path)
        return
    import psycopg

    from ocrstack.api.postgres import PostgresJobStore

    url = request.getfixturevalue("pg_url")  # skips with the reason without PostgreSQL

    def run_out(
        job_id: str, sql: str = "UPDATE jobs SET webhook_until = webhook_until - 3600 WHERE id=?"
    ) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), (job_id,))

    a, b = (PostgresJobStore(url, tmp_path / "data", lease=30) for _ in range(2))
    yield a, b, run_out
    a.close()
    b.close()


@pytest.mark.server  # the PostgreSQL half starts a private cluster on 127.0.0.1
def test_a_callback_is_owed_from_the_job_end_and_held_by_one_sender(pair) -> None:
    a, b, run_out = pair
    plain, hooked, dropped = add(a, None), add(a, "http://127.0.0.1:9/h"), add(b, "http://127.0.0.1:9/h")
    for _ in range(2):
        a.claim()
    assert a.claim_callback(60) is None  # running jobs owe nothing yet
    assert a.cancel(dropped) == "queued"  # a cancelled job sends no callback
    assert a.finish(plain, "done", done=1) and a.finish(hooked, "failed", done=0, error="bad")
    assert a.get(plain).webhook_state is None and a.get(dropped).webhook_state is None
    assert b.get(hooked).webhook_state == "pending"

    held = b.claim_callback(60)
    assert held is not None and (held.id, held.webhook_state, held.webhook_claims) == (hooked, "sending", 1)
    assert a.claim_callback(60) is None  # held: no second sender
    assert not a.hold_callback(hooked, 60, claim=1)
    assert not a.webhook_done(hooked, {"state": "delivered"}, claim=1)

    run_out(hooked)  # b died mid-delivery: its hold runs out
    again = a.claim_callback(60)
    assert again is not None and again.id == hooked and again.webhook_claims == 2
    assert not b.hold_callback(hooked, 60, claim=1)  # b, were it alive, learns it lost the callback
    assert not b.webhook_done(hooked, {"state": "delivered", "attempts": 1}, claim=1)
    assert a.hold_callback(hooked, 60, claim=2)

    run_out(hooked)  # a's sender stalled past its hold: a's other sender takes it over
    sibling = a.claim_callback(60)
    assert sibling is not None and sibling.id == hooked and sibling.webhook_claims == 3
    assert not a.hold_callback(hooked, 60, claim=2)  # same replica, but no longer its claim
    assert not a.webhook_done(hooked, {"state": "delivered", "attempts": 1}, claim=2)
    assert a.webhook_done(hooked, {"state": "delivered", "attempts": 1, "claims": 3}, claim=3)
    done = b.get(hooked)
    assert (done.webhook_state, done.webhook) == (
        "delivered",
        {"state": "delivered", "attempts": 1, "claims": 3},
    )
    assert a.claim_callback(60) is None and b.claim_callback(60) is None  # delivered once


def test_a_sqlite_store_sends_again_what_its_killed_process_was_sending(tmp_path: Path) -> None:
    before, _, _ = sqlite_pair(tmp_path)
    job = add(before, "http://127.0.0.1:9/h")
    before.claim()
    before.finish(job, "done", done=1)
    assert before.claim_callback(3600) is not None  # then the process is killed mid-POST
    after = JobStore(tmp_path / "data")  # the next start of the service
    assert after.claim_callback(60) is None  # still held by the dead process until recover()
    after.recover()
    taken = after.claim_callback(60)
    assert taken is not None and taken.id == job and taken.webhook_claims == 2


@pytest.mark.server  # the PostgreSQL half starts a private cluster on 127.0.0.1
def test_a_job_deleted_or_expired_owing_its_callback_is_gone_but_the_callback_is_sent(pair) -> None:
    a, b, run_out = pair
    sent, sending, pending, plain = (add(a, hook) for hook in (HOOK, HOOK, HOOK, None))
    for _ in range(4):
        a.claim()
    for job in (sent, sending, pending, plain):
        assert a.finish(job, "done", done=1)
    assert a.claim_callback(60).id == sent and a.webhook_done(sent, {"state": "delivered"}, claim=1)
    assert b.claim_callback(60).id == sending  # b is mid-delivery
    for job in (sent, sending, plain):
        a.delete(job)  # DELETE /v1/jobs/{id}
    assert a.expire(time.time() + 10**6) == [pending]  # its TTL passed
    for job in (sent, sending, pending, plain):  # gone for the API, files and all
        assert a.get(job) is None and b.get(job) is None and not a.job_dir(job).exists()
    assert sum(b.counts().values()) == 0 and b.jobs(JobQuery()) == []
    assert a.get(sent, hidden=True) is None and a.get(plain, hidden=True) is None  # nothing owed
    assert a.expire(time.time() + 10**6) == []  # a hidden row does not expire again

    held = a.get(sending, hidden=True)  # still owed, with what its body needs
    assert (held.webhook_state, held.state, held.filename, held.pages_done) == ("sending", "done", "a.pdf", 1)
    assert b.webhook_done(sending, {"state": "delivered", "attempts": 1}, claim=1)
    assert a.get(sending, hidden=True) is None  # its sender removed the row

    owed = a.claim_callback(60)
    assert owed is not None and owed.id == pending
    assert webhooks.payload(owed)["status"] == "done" and webhooks.payload(owed)["id"] == pending
    run_out(pending, "UPDATE jobs SET webhook_state='failed' WHERE id=?")  # recorded; its row stayed
    assert a.get(pending, hidden=True) is not None and a.expire() == []
    assert a.get(pending, hidden=True) is None  # the next expire pass removed it
    assert a.claim_callback(60) is None


@pytest.mark.server  # the PostgreSQL half starts a private cluster on 127.0.0.1
def test_a_stopped_sender_hands_back_only_the_claim_it_holds(pair) -> None:
    a, b, _ = pair
    job = add(a, HOOK)
    a.claim()
    assert a.finish(job, "done", done=1)
    assert a.claim_callback(3600).webhook_claims == 1  # a long hold; then a's replica stops
    assert not b.release_callback(job, claim=1) and not a.release_callback(job, claim=2)  # not theirs
    assert a.release_callback(job, claim=1) and b.get(job).webhook_state == "pending"
    assert not a.release_callback(job, claim=1)  # once
    again = b.claim_callback(60)  # another replica takes it at once, not in an hour
    assert again is not None and (again.id, again.webhook_claims) == (job, 2)
    assert not a.release_callback(job, claim=1) and not a.webhook_done(job, {"state": "delivered"}, claim=1)
