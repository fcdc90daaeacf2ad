"""Choosing the job store: SQLite by default, PostgreSQL for a postgresql:// URL, anything else refused
without repeating the value (it may hold a password)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.api.store import JobStore
from ocrstack.api.stores import is_postgres, open_store
from ocrstack.core.errors import ConfigError, UsageError


@pytest.mark.parametrize("value", [None, "", "sqlite"])
def test_sqlite_is_the_default(value: str | None, tmp_path: Path) -> None:
    assert not is_postgres(value)
    store = open_store(value, tmp_path / "data")
    assert isinstance(store, JobStore) and store.lease is None
    assert (tmp_path / "data" / "jobs.sqlite3").is_file()


@pytest.mark.parametrize("value", ["postgresql://u@h/db", "postgres://u@h:5433/db"])
def test_postgres_urls_select_postgres(value: str) -> None:
    assert is_postgres(value)


def test_other_urls_are_refused_without_echoing_them() -> None:
    with pytest.raises(UsageError) as info:
        is_postgres("mysql://user:hunter2@db/jobs")
    assert "hunter2" not in info.value.render() and "postgresql://" in info.value.render()


def test_sqlite_heartbeat_and_finish_once(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    part = store.upload_tmp()
    part.write_bytes(b"%PDF-1.4 x")
    job = store.create(upload=part, name="a.pdf", filename="a.pdf", options={}, pages_total=1)
    store.claim()
    assert store.heartbeat(job.id) == "held"
    assert store.finish(job.id, "done", done=1) is True
    assert store.finish(job.id, "done", done=1) is False and store.heartbeat(job.id) == "lost"
    other = JobStore(tmp_path / "data")
    part = other.upload_tmp()
    part.write_bytes(b"%PDF-1.4 x")
    second = other.create(upload=part, name="b.pdf", filename="b.pdf", options={}, pages_total=1)
    other.claim()
    other.cancel(second.id)
    assert other.heartbeat(second.id) == "cancelled"


def test_missing_psycopg_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg -> ImportError
    monkeypatch.delitem(sys.modules, "ocrstack.api.postgres", raising=False)
    with pytest.raises(ConfigError, match="needs psycopg") as info:
        open_store("postgresql://u:pw@127.0.0.1:1/db", tmp_path / "data")
    assert "pw@" not in info.value.render()


def test_an_older_sqlite_database_gains_the_webhook_columns(tmp_path: Path) -> None:
    import sqlite3

    data = tmp_path / "data"
    data.mkdir()
    with sqlite3.connect(data / "jobs.sqlite3") as db:  # the jobs table as issue 12 wrote it
        db.execute(
            "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
            " state TEXT NOT NULL, filename TEXT NOT NULL, input TEXT NOT NULL, options TEXT NOT NULL,"
            " pages_total INTEGER NOT NULL, pages_done INTEGER NOT NULL DEFAULT 0,"
            " pages_cached INTEGER NOT NULL DEFAULT 0, error TEXT, fix TEXT, created REAL NOT NULL,"
            " started REAL, finished REAL, expires REAL)"
        )
        db.execute(
            "INSERT INTO jobs (id, state, filename, input, options, pages_total, created)"
            " VALUES ('old1', 'done', 'a.pdf', 'x', '{}', 1, 0)"
        )
    store = JobStore(data)
    old = store.get("old1")
    assert old.webhook is None and old.callback is None and old.webhook_state is None
    assert store.claim_callback(60) is None  # a job of before owes no callback
    assert not store.webhook_done("old1", {"state": "failed", "attempts": 5}, claim=0)  # nor takes a record
    assert store.get("old1").webhook is None


@pytest.mark.parametrize("opened", [False, True], ids=["of-0003", "opened-by-0004"])
def test_an_sqlite_database_of_before_the_outbox_owes_the_callbacks_never_sent(
    tmp_path: Path, opened: bool
) -> None:
    """The code before the outbox recorded a callback only once its POSTs ended; a job that ended
    without a record never got its callback (``opened``: the release of the outbox added its
    columns, which left those jobs owing nothing)."""
    import sqlite3

    from ocrstack.api import callbackrows

    data = tmp_path / "data"
    data.mkdir()
    with sqlite3.connect(data / "jobs.sqlite3") as db:  # the jobs table as the webhooks of 0003 wrote it
        db.execute(
            "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
            " state TEXT NOT NULL, filename TEXT NOT NULL, input TEXT NOT NULL, options TEXT NOT NULL,"
            " pages_total INTEGER NOT NULL, pages_done INTEGER NOT NULL DEFAULT 0,"
            " pages_cached INTEGER NOT NULL DEFAULT 0, error TEXT, fix TEXT, created REAL NOT NULL,"
            " started REAL, finished REAL, expires REAL, callback TEXT, webhook TEXT)"
        )
        rows = [  # id, state, callback, webhook record
            ("sent", "done", "http://h/x", '{"state": "delivered", "attempts": 1}'),
            ("refused", "failed", "http://h/x", '{"state": "failed", "attempts": 1}'),
            ("plain", "done", None, None),
            ("busy", "running", "http://h/x", None),
            ("lost", "done", "http://h/x", None),  # its process died before the POSTs ended
            ("lost2", "partial", "http://h/x", None),
            ("dropped", "cancelled", "http://h/x", None),
        ]
        db.executemany(
            "INSERT INTO jobs (id, state, filename, input, options, pages_total, created, callback, webhook)"
            " VALUES (?, ?, 'a.pdf', 'x', '{}', 1, 0, ?, ?)",
            rows,
        )
        if opened:
            for column, kind in callbackrows.SQLITE_COLUMNS.items():
                if column not in ("callback", "webhook"):
                    db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
    store = JobStore(data)
    states = {j: store.get(j).webhook_state for j, *_ in rows}
    assert states == {
        "sent": "delivered",  # from the record (which the release of the outbox did not copy)
        "refused": "failed",
        "plain": None,
        "busy": None,
        "lost": "pending",
        "lost2": "pending",
        "dropped": None,
    }
    assert [store.claim_callback(60).id for _ in range(2)] == ["lost", "lost2"]
    assert store.claim_callback(60) is None
