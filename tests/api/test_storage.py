"""Issue 25 item 3: a full data dir is the server's problem (507, not "malformed body"), a job it
stops ends failed with the reason while the worker goes on, and ``/ready`` says not ready. The
full disk is simulated through seams (no disk is filled)."""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.helpers import TESTSERVER, make_page
from ocrstack.api import storage, uploads
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
SQLITE_FULL = sqlite3.OperationalError("database or disk is full")


@pytest.fixture
def app(tmp_path: Path) -> FastAPI:
    """The app without its worker started (no lifespan)."""
    return create_app(ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path / "data"))


@pytest.fixture(scope="module")
def png(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path: Path = tmp_path_factory.mktemp("doc") / "note.png"
    make_page("Short note", "One page.").save(path)
    return path.read_bytes()


def submit(app: FastAPI, png: bytes):
    return TestClient(app).post("/v1/jobs", files={"file": ("note.png", png, "image/png")})


def test_is_full_recognises_enospc_edquot_and_sqlite() -> None:
    assert storage.is_full(ENOSPC) and storage.is_full(OSError(errno.EDQUOT, "quota"))
    assert storage.is_full(SQLITE_FULL)
    wrapped = RuntimeError("while writing")
    wrapped.__cause__ = ENOSPC
    assert storage.is_full(wrapped)
    assert not storage.is_full(OSError(errno.EACCES, "denied")) and not storage.is_full(ValueError())


def test_an_upload_into_a_full_data_dir_answers_507(
    app: FastAPI, png: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Full:
        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def close(self) -> None:
            pass

    monkeypatch.setattr(uploads, "open", lambda *a, **k: Full(), raising=False)
    r = submit(app, png)
    assert r.status_code == 507, r.text
    assert r.json() == {
        "error": "the server's data dir is full (no space left while storing the upload)",
        "fix": "retry later; the operator must free space in the service's --data-dir",
    }
    assert str(app.state.service.store.data_dir) not in r.text


def test_a_full_job_database_answers_507(app: FastAPI, png: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    def create(**_k):
        raise SQLITE_FULL

    monkeypatch.setattr(app.state.service.store, "create", create)
    r = TestClient(app, raise_server_exceptions=False).post(
        "/v1/jobs", files={"file": ("note.png", png, "image/png")}
    )
    assert r.status_code == 507, r.text
    assert r.json()["error"].startswith("the server's data dir is full")
    assert not list((app.state.service.store.data_dir / "uploads").iterdir())  # the upload was removed


def test_other_server_errors_stay_500(app: FastAPI, png: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    def create(**_k):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(app.state.service.store, "create", create)
    r = TestClient(app, raise_server_exceptions=False).post(
        "/v1/jobs", files={"file": ("note.png", png, "image/png")}
    )
    assert r.status_code == 500


def test_ready_is_503_while_the_data_dir_takes_no_writes(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    def probe(data_dir: Path) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    app.state.service.worker.ready.set()
    monkeypatch.setattr(storage, "probe", probe)
    r = TestClient(app).get("/ready")
    assert r.status_code == 503
    assert r.json()["error"] == f"the server's data dir takes no writes ({os.strerror(errno.ENOSPC)})"
    monkeypatch.undo()
    assert TestClient(app).get("/ready").status_code == 200  # space again: ready again


def test_the_probe_leaves_nothing_behind(tmp_path: Path) -> None:
    assert storage.unwritable(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_a_job_stopped_by_a_full_disk_fails_and_the_worker_goes_on(
    app: FastAPI, png: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TTL sweep and the first job hit ENOSPC, and even the job's ``failed`` record hits
    SQLite's disk-full once; it ends failed with the reason when the database takes the write,
    and the next job runs."""
    first = submit(app, png).json()["id"]
    second = submit(app, png).json()["id"]
    svc = app.state.service
    worker, store = svc.worker, svc.store
    monkeypatch.setattr(worker, "_warm", lambda engines: worker.ready.set())  # no models needed
    ran: list[str] = []
    second_ran = threading.Event()

    def run(job, engines):
        ran.append(job.id)
        if job.id == first:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "page.json")
        store.finish(job.id, "done", done=1)
        second_ran.set()

    real_finish = store.finish
    calls: list[str] = []

    def finish(job_id, state, **kw):
        calls.append(state)
        if len(calls) == 1:
            raise SQLITE_FULL
        return real_finish(job_id, state, **kw)

    def expire(now=None):
        raise SQLITE_FULL  # the TTL sweep hits the full disk too: the thread goes on

    monkeypatch.setattr(worker, "_run", run)
    monkeypatch.setattr(store, "finish", finish)
    monkeypatch.setattr(store, "expire", expire)
    worker.start()
    try:
        assert second_ran.wait(60)
    finally:
        worker.stop()
    assert ran == [first, second]
    job = store.get(first)
    assert (job.state, job.error, job.fix) == ("failed", storage.JOB_ERROR, storage.JOB_FIX)
    assert store.get(second).state == "done"
    assert worker.stopped == {} and len(worker.unfinished) == 0
