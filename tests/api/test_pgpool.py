"""The PostgreSQL store's connection pool (:mod:`ocrstack.api.pgpool`) on a private cluster: bounded,
reused, broken connections dropped, fresh ones after a database restart; a status read does not
wait behind another thread's statement (before: one connection behind one lock); and the query
plans of the status and list reads (index scans; list positions numbered once, not per row)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from ocrstack.api.jobquery import JobQuery, select
from ocrstack.api.pgpool import ConnectionPool
from ocrstack.api.postgres import PostgresJobStore
from ocrstack.api.store import COLUMNS, StoreUnavailable

pytestmark = [pytest.mark.server]


def add(store: PostgresJobStore, name: str = "a.pdf"):
    path = store.upload_tmp()
    path.write_bytes(b"%PDF-1.4 x")
    return store.create(upload=path, name=name, filename=name, options={}, pages_total=1)


def test_the_pool_is_bounded_and_a_caller_waits_then_gets_503(pg_url: str) -> None:
    pool = ConnectionPool(lambda: psycopg.connect(pg_url, autocommit=True), size=2, wait=0.3)
    with pool.connection() as a, pool.connection() as b:
        assert a is not b and pool.open == 2
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailable, match="all 2 connections") as info:
            with pool.connection():
                pass
        assert time.monotonic() - t0 >= 0.3 and pool.waits == 1
        assert "--db-pool" in info.value.render()
    assert (pool.open, pool.idle) == (2, 2)
    pool.close()
    assert (pool.open, pool.idle) == (0, 0)


def test_a_waiting_caller_gets_the_connection_given_back(pg_url: str) -> None:
    pool = ConnectionPool(lambda: psycopg.connect(pg_url, autocommit=True), size=1, wait=10)
    got: list[object] = []
    with pool.connection() as first:
        t = threading.Thread(target=lambda: got.append(pool._take()))
        t.start()
        time.sleep(0.2)
        assert not got  # waiting: the only connection is in use
    t.join(5)
    assert got == [first] and pool.opened == 1
    pool._give(first)
    pool.close()


def test_connections_are_reused_and_broken_ones_dropped(pg_url: str) -> None:
    pool = ConnectionPool(lambda: psycopg.connect(pg_url, autocommit=True), size=3, wait=1)
    for _ in range(20):
        with pool.connection() as conn:
            conn.execute("SELECT 1")
    assert pool.opened == 1
    with pool.connection() as conn:
        conn.execute("BEGIN")  # given back inside a transaction: not reusable
    assert (pool.open, pool.idle) == (0, 0) and conn.closed
    with pool.connection() as conn:
        conn.close()
    assert pool.open == 0
    with pool.connection() as conn:
        assert conn.execute("SELECT 2").fetchone() == (2,)
    assert pool.opened == 3
    pool.close()


def test_the_store_opens_fresh_connections_after_a_database_restart(
    pg_cluster, pg_url: str, tmp_path: Path
) -> None:
    store = PostgresJobStore(pg_url, tmp_path / "data", pool=3)
    job = add(store)
    holders = [threading.Thread(target=store.get, args=(job.id,)) for _ in range(3)]
    for t in holders:
        t.start()
    for t in holders:
        t.join()
    opened = store.pool.opened
    pg_cluster.restart()  # every idle connection of the pool is dead now
    assert store.get(job.id).state == "queued"
    assert store.pool.opened > opened and store.pool.open <= 3
    store.close()


def test_a_status_read_does_not_wait_for_another_threads_statement(pg_url: str, tmp_path: Path) -> None:
    """Before the pool, ``get`` waited for the worker's statement on the one shared connection."""
    store = PostgresJobStore(pg_url, tmp_path / "data")
    job = add(store)
    started = threading.Event()

    def slow(conn: psycopg.Connection) -> None:
        started.set()
        conn.execute("SELECT pg_sleep(2)")

    worker = threading.Thread(target=store._do, args=(slow,))
    worker.start()
    assert started.wait(5)
    t0 = time.monotonic()
    assert store.get(job.id).position == 0
    assert time.monotonic() - t0 < 1.0
    worker.join()
    store.close()


def _plan(url: str, sql: str, args: tuple | list) -> str:
    with psycopg.connect(url) as conn:
        rows = conn.execute(f"EXPLAIN {sql}", args).fetchall()
    return "\n".join(r[0] for r in rows)


def test_status_and_list_reads_use_the_indexes_and_count_positions_once(pg_url: str, tmp_path: Path) -> None:
    store = PostgresJobStore(pg_url, tmp_path / "data")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jobs (id, state, filename, input, options, pages_total, created)"
            " SELECT 'j' || i, CASE WHEN i % 3 = 0 THEN 'done' ELSE 'queued' END, 'a.pdf', 'x', '{}', 1, i"
            " FROM generate_series(1, 5000) AS i"
        )
        conn.execute("ANALYZE jobs")
    from ocrstack.api.jobquery import POSITION

    status = _plan(pg_url, f"SELECT {COLUMNS}, {POSITION} FROM jobs WHERE id=%s", ("j77",))
    assert "Index Scan using jobs_id_key" in status, status
    assert "Seq Scan" not in status, status  # the position is counted on an index too
    sql, args = select(JobQuery(limit=50), "%s", COLUMNS)
    listing = _plan(pg_url, sql, args)
    assert "WindowAgg" in listing and "SubPlan" not in listing, listing  # numbered once, not per row
    page = store.jobs(JobQuery(limit=3))[:3]  # (one more row says whether a next page follows)
    # j1..j5000 in order, every third one done: 3333 queued jobs before j5000
    assert [(j.id, j.position) for j in page] == [("j5000", 3333), ("j4999", 3332), ("j4998", None)]
    assert store.get("j4999").position == 3332  # the status read agrees with the list
    store.close()
