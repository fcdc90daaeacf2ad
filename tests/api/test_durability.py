"""Durability: a server killed with SIGKILL mid-job finishes every accepted job after a restart
without recomputing finished pages; finished jobs expire after the TTL with their files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

from api.helpers import make_pdf, wait_job
from ocrstack.api.process import ServiceProcess
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until

pytestmark = [pytest.mark.server]


def cached_pages(data: Path, job_id: str) -> set[int]:
    return {int(f.name[1:5]) - 1 for f in (data / "jobs" / job_id / "out").glob(".ocrstack-cache/*/p*.json")}


def test_sigkill_then_restart_finishes_without_recomputing(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "five.pdf", pages=5)
    data = tmp_path / "data"
    with FakeOpenAIServer(latency=0.4, max_concurrent=1) as fake:
        args = ["--recognizer", "openai", "--server-url", fake.url, "--layout", "none", "--concurrency", "1"]
        svc = ServiceProcess(data, args).start()
        try:
            with httpx.Client(base_url=svc.url, trust_env=False, timeout=30) as c:
                job = c.post("/v1/jobs", files={"file": ("five.pdf", pdf.read_bytes())}).json()
                second = c.post("/v1/jobs", files={"file": ("again.pdf", pdf.read_bytes())}).json()
                wait_until(lambda: len(cached_pages(data, job["id"])) >= 2, "2 pages of the job cached", 60)
            svc.kill()
        finally:
            svc.stop()
        before = cached_pages(data, job["id"])
        assert 2 <= len(before) < 5, before
        with sqlite3.connect(data / "jobs.sqlite3") as db:
            assert db.execute("SELECT state FROM jobs WHERE id=?", (job["id"],)).fetchone()[0] == "running"
            (boot1,) = {b for (b,) in db.execute("SELECT DISTINCT boot FROM page_runs")}
        with (
            ServiceProcess(data, args) as svc2,
            httpx.Client(base_url=svc2.url, trust_env=False, timeout=30) as c,
        ):
            assert wait_job(c, job["id"])["status"] == "done"
            assert wait_job(c, second["id"])["status"] == "done"
            final = c.get(f"/v1/jobs/{job['id']}").json()
            markdown = c.get(job["result_url"]).text
    assert final["pages_done"] == 5 and final["pages_cached"] == len(before)
    assert all(f"page {i}" in markdown for i in range(1, 6))
    with sqlite3.connect(data / "jobs.sqlite3") as db:
        runs = db.execute("SELECT page, boot FROM page_runs WHERE job_id=?", (job["id"],)).fetchall()
    after = {p for p, b in runs if b != boot1}
    assert after and not (after & before), (before, after)
    assert after | before == set(range(5))


def test_finished_jobs_expire_with_their_files(tmp_path: Path, tiny_png: Path) -> None:
    with FakeOpenAIServer() as fake:
        args = [
            "--recognizer",
            "openai",
            "--server-url",
            fake.url,
            "--layout",
            "none",
            "--ttl-hours",
            "0.0005",
        ]
        with (
            ServiceProcess(tmp_path / "data", args) as svc,
            httpx.Client(base_url=svc.url, trust_env=False) as c,
        ):
            job = c.post("/v1/jobs", files={"file": ("a.png", tiny_png.read_bytes())}).json()
            assert wait_job(c, job["id"])["status"] == "done"
            assert (tmp_path / "data" / "jobs" / job["id"]).is_dir()
            wait_until(lambda: c.get(job["status_url"]).status_code == 404, "the job to expire", 15, 0.2)
    assert not (tmp_path / "data" / "jobs" / job["id"]).exists()
