"""A job's PDF password never reaches the job database (ocrstack.api.jobsecrets; issue 25 item 7):
kept in the taking process's memory by reference, restored for its run, and a job whose process
is gone fails with the reason and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.api import options as api_options
from ocrstack.api.jobsecrets import REF, JobSecrets, SecretLost
from ocrstack.api.metrics import Metrics
from ocrstack.api.store import JobStore
from ocrstack.api.worker import Worker
from ocrstack.parsing.options import ParseOptions
from support.inputs import multipage_tiff

PASSWORD = "pdf-pass-7f3a9c"


def test_stored_options_hold_a_reference_not_the_password() -> None:
    opts = ParseOptions(inputs=(), password=PASSWORD)
    kept = JobSecrets()
    stored = {**api_options.to_json(opts), **kept.keep(opts)}
    assert PASSWORD not in repr(stored) and stored["password"] is None and stored[REF]
    assert kept.restore(stored, api_options.from_json(stored, ParseOptions(inputs=()))).password == PASSWORD
    assert kept.keep(ParseOptions(inputs=())) == {}  # no secret, no reference


def test_a_process_without_the_secret_says_so_and_how_to_fix_it() -> None:
    stored = {**api_options.to_json(ParseOptions(inputs=())), REF: "f" * 24}
    with pytest.raises(SecretLost) as lost:
        JobSecrets().restore(stored, ParseOptions(inputs=()))
    assert "kept only in the memory" in lost.value.message and "password" in lost.value.remedy


def test_a_job_taken_after_a_restart_fails_with_the_reason_and_the_db_never_holds_it(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    before = JobSecrets()  # the process that took the upload
    opts = ParseOptions(inputs=(), password=PASSWORD)
    upload = multipage_tiff(tmp_path / "upload.tif", 1)
    job = store.create(
        upload=upload, name="doc.tif", filename="doc.tif", pages_total=1,
        options={**api_options.to_json(opts), **before.keep(opts)},
    )  # fmt: skip
    after = Worker(store, Metrics(store.counts), ParseOptions(inputs=(), layout="none"))  # a new process
    claimed = store.claim()
    assert claimed is not None and claimed.id == job.id
    after._run(claimed, {})
    failed = store.get(job.id)
    assert failed is not None and failed.state == "failed", failed
    assert "kept only in the memory" in (failed.error or "") and failed.fix
    store.close()
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
