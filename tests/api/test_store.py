"""The SQLite job store: queue order, bound, recovery after a crash, TTL expiry."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ocrstack.api.store import JobStore, QueueFull


def upload(store: JobStore, data: bytes = b"%PDF-1.4 x") -> Path:
    path = store.upload_tmp()
    path.write_bytes(data)
    return path


def add(store: JobStore, name: str = "a.pdf"):
    return store.create(upload=upload(store), name=name, filename=name, options={"dpi": 200}, pages_total=2)


def test_wal_file_and_fifo_positions(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    a, b, c = add(store), add(store), add(store)
    mode = sqlite3.connect(tmp_path / "data" / "jobs.sqlite3").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert [store.get(j.id).position for j in (a, b, c)] == [0, 1, 2]
    assert store.claim().id == a.id
    assert store.get(a.id).position is None and store.get(c.id).position == 1
    assert (store.data_dir / a.input).read_bytes() == b"%PDF-1.4 x"


def test_queue_bound_records_nothing(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data", max_queue=2)
    add(store), add(store)
    part = upload(store)
    with pytest.raises(QueueFull):
        store.create(upload=part, name="x.pdf", filename="x.pdf", options={}, pages_total=1)
    assert store.counts()["queued"] == 2
    assert part.exists()  # the caller removes it


def test_recover_requeues_running_jobs_in_order(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    a, b = add(store), add(store)
    store.claim()
    store.page_ran(a.id, 0)
    store.close()
    again = JobStore(tmp_path / "data")  # a new server on the same data dir
    assert again.recover() == 1
    assert again.get(a.id).state == "queued" and again.get(a.id).position == 0
    assert again.get(b.id).position == 1
    assert again.page_runs(a.id)[0][:2] == (a.id, 0)
    assert again.boot != store.boot


def test_ttl_deletes_record_and_files(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data", ttl=10)
    a = add(store)
    store.claim()
    store.finish(a.id, "done", done=2)
    job = store.get(a.id)
    assert job.expires == pytest.approx(job.finished + 10)
    assert store.expire(now=job.finished + 5) == []
    assert store.expire(now=job.finished + 11) == [a.id]
    assert store.get(a.id) is None and not store.job_dir(a.id).exists()


def test_cancel_keeps_a_record_until_expiry(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    a = add(store)
    assert store.cancel(a.id) == "queued"
    assert store.get(a.id).state == "cancelled" and store.claim() is None
    assert store.cancel("nope") is None
