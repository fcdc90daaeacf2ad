"""Issue 25 item 6: a damaged job database stops the service at start with one line naming the
file and the fix (exit 9, no traceback); a worker thread that dies makes ``/ready`` answer 503."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.helpers import TESTSERVER
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.api.integrity import DatabaseDamaged
from ocrstack.api.store import JobStore
from ocrstack.cli import main


def filled(data: Path, jobs: int = 40) -> Path:
    """A data dir whose jobs.sqlite3 holds ``jobs`` jobs (several database pages); its path."""
    store = JobStore(data, max_queue=1000)
    for i in range(jobs):
        upload = store.upload_tmp()
        upload.write_bytes(b"%PDF-1.4")
        store.create(upload=upload, name="a.pdf", filename="a.pdf", options={"x": "y" * 200}, pages_total=i)
    store.close()
    return data / "jobs.sqlite3"


def damage_pages(db: Path) -> None:
    """Overwrite every database page after the first (schema and header kept) with garbage."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(db.read_bytes())
    assert len(raw) > 3 * 4096
    for i in range(4096 + 100, len(raw), 7):
        raw[i] = 0xA5
    db.write_bytes(bytes(raw))


def test_damaged_pages_refuse_the_start(tmp_path: Path) -> None:
    db = filled(tmp_path / "data")
    damage_pages(db)
    with pytest.raises(DatabaseDamaged) as err:
        JobStore(tmp_path / "data")
    assert err.value.message.startswith(f"job database {db} is damaged (")
    assert len(err.value.render()) < len(str(db)) * 3 + 400  # one line, not the whole quick_check report
    assert f"mv {db} {db}.damaged" in err.value.remedy and "restore it from a backup" in err.value.remedy


def test_a_file_that_is_no_database_refuses_the_start(tmp_path: Path) -> None:
    db = filled(tmp_path / "data")
    db.write_bytes(b"this is not SQLite" * 500)
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    with pytest.raises(DatabaseDamaged, match="is damaged"):
        JobStore(tmp_path / "data")


def test_an_empty_database_beside_old_jobs_refuses_the_start(tmp_path: Path) -> None:
    db = filled(tmp_path / "data", jobs=2)
    db.write_bytes(b"")
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    with pytest.raises(DatabaseDamaged, match=r"0 bytes, but jobs/ holds job directories"):
        JobStore(tmp_path / "data")


def test_an_empty_database_in_a_fresh_data_dir_is_fine(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "jobs.sqlite3").write_bytes(b"")
    store = JobStore(tmp_path / "data")
    assert store.counts()["queued"] == 0
    store.close()


def test_api_serve_prints_one_line_and_exits_9(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = filled(tmp_path / "data")
    damage_pages(db)
    assert main(["api", "serve", "--data-dir", str(tmp_path / "data"), "--port", "0"]) == 9
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if x.startswith("ocrstack: error:")]
    assert f"job database {db} is damaged" in line and "-- fix: stop the service and move it aside" in line


def test_ready_answers_503_when_a_worker_thread_dies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path / "data"))
    worker = app.state.service.worker
    monkeypatch.setattr(worker, "_warm", lambda engines: worker.ready.set())  # no models needed

    def claim():
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(worker.store, "claim", claim)
    worker.start()
    worker._threads[0].join(30)
    assert not worker._threads[0].is_alive()
    r = TestClient(app).get("/ready")
    assert r.status_code == 503
    assert r.json()["error"] == (
        "worker thread ocrstack-job-0 stopped: DatabaseError: database disk image is malformed"
    )
    assert "restart the service" in r.json()["fix"]
    worker.stop()
