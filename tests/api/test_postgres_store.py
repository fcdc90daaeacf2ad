"""The PostgreSQL job store against a real private cluster: migrations, queue, leases, hand-over,
finish-once, cancel across replicas, reconnect after a database restart, and a DSN that never
reaches an error message."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from ocrstack.api.postgres import PostgresJobStore, describe, migrations
from ocrstack.api.store import QueueFull, StoreUnavailable
from ocrstack.api.stores import open_store
from ocrstack.core.errors import UsageError

pytestmark = [pytest.mark.server]


def add(store: PostgresJobStore, name: str = "a.pdf", callback: str | None = None):
    path = store.upload_tmp()
    path.write_bytes(b"%PDF-1.4 x")
    return store.create(
        upload=path, name=name, filename=name, options={"dpi": 200}, pages_total=3, callback=callback
    )


def expire_lease(url: str, job_id: str) -> None:
    """What the passing of ``lease`` seconds without a heartbeat does (no sleeping in tests)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE jobs SET lease_until = lease_until - 3600 WHERE id=%s", (job_id,))


def test_migrations_are_versioned_and_applied_once(pg_url: str, tmp_path: Path) -> None:
    a = PostgresJobStore(pg_url, tmp_path / "data")
    b = PostgresJobStore(pg_url, tmp_path / "data")  # a second replica: nothing left to apply
    assert a.schema_version == b.schema_version == migrations()[-1][0] >= 2
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
    assert rows == [(v, n) for v, n, _ in migrations()]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_version VALUES (999, 'future', 0)")
    with pytest.raises(StoreUnavailable, match="schema version 999"):
        PostgresJobStore(pg_url, tmp_path / "data")


@pytest.mark.parametrize("ran", [3, 4], ids=["from-0003", "from-0004"])
def test_a_database_of_before_the_outbox_keeps_its_jobs_and_callbacks(
    pg_url: str, tmp_path: Path, ran: int
) -> None:
    """An upgrade: 0001-0003 with jobs of every kind in them (then 0004 as the release of the
    outbox applied it, when ``ran`` is 4), then a replica applying the rest."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                     " applied DOUBLE PRECISION NOT NULL)")  # fmt: skip
        for version, name, sql in migrations()[:3]:
            conn.execute(sql.encode())
            conn.execute("INSERT INTO schema_version VALUES (%s, %s, 0)", (version, name))
        rows = [  # id, state, callback, webhook record, lease_until (running ones: passed)
            ("sent", "done", "http://h/x", '{"state": "delivered", "attempts": 1}', None),
            ("refused", "failed", "http://h/x", '{"state": "failed", "attempts": 1}', None),
            ("plain", "done", None, None, None),
            ("busy", "running", "http://h/x", None, 0.0),
            # the code of 0003 recorded a callback only once its POSTs ended: these never got theirs
            ("lost", "done", "http://h/x", None, None),  # its replica died first, or had no secret
            ("lost2", "partial", "http://h/x", None, None),
            ("odd", "failed", "http://h/x", '{"state": "sending"}', None),  # no final state
            ("dropped", "cancelled", "http://h/x", None, None),  # cancelled jobs send none
        ]
        for job_id, state, callback, webhook, until in rows:
            conn.execute(
                "INSERT INTO jobs (id, state, filename, input, options, pages_total, created, callback,"
                " webhook, owner, lease_until) VALUES (%s, %s, 'a.pdf', 'x', '{}', 1, 0, %s, %s, 'old', %s)",
                (job_id, state, callback, webhook, until),
            )
        for version, name, sql in migrations()[3:ran]:
            conn.execute(sql.encode())
            conn.execute("INSERT INTO schema_version VALUES (%s, %s, 0)", (version, name))
    store = PostgresJobStore(pg_url, tmp_path / "data")
    assert store.schema_version == migrations()[-1][0]
    states = {j: (store.get(j).webhook_state, store.get(j).webhook_claims) for j, *_ in rows}
    assert states == {
        "sent": ("delivered", 0),
        "refused": ("failed", 0),
        "plain": (None, 0),
        "busy": (None, 0),
        "lost": ("pending", 0),
        "lost2": ("pending", 0),
        "odd": ("pending", 0),
        "dropped": (None, 0),
    }
    assert store.get("sent").webhook == {"state": "delivered", "attempts": 1}
    owed = [store.claim_callback(60) for _ in range(3)]
    assert [j.id for j in owed] == ["lost", "lost2", "odd"]  # owed; nothing recorded is sent again
    assert store.claim_callback(60) is None
    assert store.claim().id == "busy" and store.finish("busy", "done", done=1)  # a replica of after
    owed = store.claim_callback(60)
    assert (owed.id, owed.webhook_state, owed.webhook_claims) == ("busy", "sending", 1)


def test_fifo_positions_bound_and_replicas_see_each_other(pg_url: str, tmp_path: Path) -> None:
    a = open_store(pg_url, tmp_path / "data", max_queue=3)
    b = open_store(pg_url, tmp_path / "data", max_queue=3)
    assert isinstance(a, PostgresJobStore)
    j1, j2, j3 = add(a), add(b, callback="http://hooks/x"), add(a)
    assert a.get(j2.id).callback == "http://hooks/x"
    assert [b.get(j.id).position for j in (j1, j2, j3)] == [0, 1, 2]
    with pytest.raises(QueueFull):
        add(b)
    assert b.counts()["queued"] == 3
    assert (tmp_path / "data" / j2.input).read_bytes() == b"%PDF-1.4 x"
    assert b.claim().id == j1.id and a.claim().id == j2.id  # never the same job twice
    assert a.get(j1.id).state == "running" and a.get(j3.id).position == 0
    assert a.get(j1.id).callback is None and a.get(j1.id).webhook is None
    assert not b.webhook_done(j1.id, {"state": "delivered", "attempts": 1}, claim=0)  # none claimed
    assert a.get(j1.id).webhook is None
    b.delete(j3.id)
    assert a.get(j3.id) is None and not a.job_dir(j3.id).exists()


def test_expired_lease_hands_the_job_over_and_only_the_holder_finishes(pg_url: str, tmp_path: Path) -> None:
    dead, alive = (PostgresJobStore(pg_url, tmp_path / "data", lease=30) for _ in range(2))
    job = add(dead)
    first = dead.claim()
    assert first.id == job.id
    dead.page_ran(job.id, 0)
    assert alive.claim() is None  # the lease is held
    assert dead.heartbeat(job.id) == "held"
    expire_lease(pg_url, job.id)
    taken = alive.claim()
    assert taken.id == job.id and taken.started == first.started  # resumed, not restarted
    alive.page_ran(job.id, 1)
    assert dead.heartbeat(job.id) == "lost"
    assert dead.finish(job.id, "done", done=3) is False  # the old holder cannot finish it
    assert alive.finish(job.id, "done", done=3, cached=1) is True
    assert alive.finish(job.id, "done", done=3) is False  # finished once
    assert alive.get(job.id).state == "done" and alive.get(job.id).pages_cached == 1
    assert [(p, boot) for _, p, boot in alive.page_runs(job.id)] == [(0, dead.boot), (1, alive.boot)]


def test_cancel_on_another_replica_reaches_the_holder(pg_url: str, tmp_path: Path) -> None:
    a, b = (PostgresJobStore(pg_url, tmp_path / "data") for _ in range(2))
    job = add(a)
    a.claim()
    assert b.cancel(job.id) == "running"
    assert a.heartbeat(job.id) == "cancelled"
    assert a.finish(job.id, "done", done=3) is False and b.get(job.id).state == "cancelled"
    assert b.cancel("nope") is None


def test_recover_requeues_only_expired_leases(pg_url: str, tmp_path: Path) -> None:
    a = PostgresJobStore(pg_url, tmp_path / "data")
    held, dead = add(a), add(a)
    a.claim(), a.claim()
    expire_lease(pg_url, dead.id)
    assert PostgresJobStore(pg_url, tmp_path / "data").recover() == 1
    assert a.get(held.id).state == "running" and a.get(dead.id).state == "queued"


def test_reconnects_after_a_database_restart(pg_cluster, pg_url: str, tmp_path: Path) -> None:
    store = PostgresJobStore(pg_url, tmp_path / "data")
    job = add(store)
    pg_cluster.restart()
    assert store.get(job.id).state == "queued"  # the dropped connection was replaced
    assert store.claim().id == job.id


def test_dsn_and_password_never_reach_messages(pg_cluster, tmp_path: Path) -> None:
    from support.postgres import free_port

    url = f"postgresql://ocrstack:s3cret-pw@127.0.0.1:{free_port()}/jobs"
    with pytest.raises(StoreUnavailable) as info:
        PostgresJobStore(url, tmp_path / "data", reconnect=0.2)
    text = info.value.render()
    assert "s3cret-pw" not in text and "ocrstack:" not in text and "127.0.0.1" in text
    assert describe(url).endswith("/jobs") and "s3cret" not in describe(url)
    with pytest.raises(UsageError) as bad:
        open_store("mysql://u:s3cret-pw@h/db", tmp_path / "data")
    assert "s3cret-pw" not in bad.value.render()
