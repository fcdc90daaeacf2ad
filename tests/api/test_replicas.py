"""N ``ocrstack api serve`` replicas on one PostgreSQL database and one shared data dir (issue 23):
any replica answers for any job; a SIGKILLed replica's job is resumed by another from the page
cache (no finished page recomputed, finished once); a database restart mid-run loses nothing."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import httpx
import psycopg
import pytest

from api.helpers import make_pdf, wait_job
from ocrstack.api.process import ServiceProcess
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until

pytestmark = [pytest.mark.server, pytest.mark.slow]
PAGES = 6


def cached_pages(data: Path, job_id: str) -> set[int]:
    return {int(f.name[1:5]) - 1 for f in (data / "jobs" / job_id / "out").glob(".ocrstack-cache/*/p*.json")}


def wait_cached(data: Path, job_id: str, n: int, timeout: float = 60.0) -> set[int]:
    wait_until(lambda: len(cached_pages(data, job_id)) >= n, f"{n} cached page(s) of job {job_id}", timeout)
    return cached_pages(data, job_id)


def replica(data: Path, url: str | None, fake: FakeOpenAIServer, name: str) -> ServiceProcess:
    """A replica on ``--database url`` (None: ``$OCRSTACK_DATABASE_URL``), 2 s leases, fake recognizer."""
    args = [*(["--database", url] if url else []), "--lease-seconds", "2", "--recognizer", "openai",
            "--server-url", fake.url, "--layout", "none", "--concurrency", "1"]  # fmt: skip
    return ServiceProcess(data, args, log=data.parent / f"{name}.log")


def runs(url: str, job_id: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT page, boot FROM page_runs WHERE job_id=%s", (job_id,)).fetchall()


def test_any_replica_answers_for_any_job(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    pdf = make_pdf(tmp_path / "two.pdf", pages=2)
    monkeypatch.setenv("OCRSTACK_DATABASE_URL", pg_url)  # B reads it from the environment
    with FakeOpenAIServer() as fake, ExitStack() as stack:
        a, b = (stack.enter_context(replica(data, url, fake, n)) for n, url in (("a", pg_url), ("b", None)))
        ca = stack.enter_context(httpx.Client(base_url=a.url, trust_env=False, timeout=30))
        cb = stack.enter_context(httpx.Client(base_url=b.url, trust_env=False, timeout=30))
        job = ca.post("/v1/jobs", files={"file": ("two.pdf", pdf.read_bytes())}).json()
        assert wait_job(cb, job["id"])["status"] == "done"
        assert "page 2" in cb.get(job["result_url"]).text
        assert ca.get(job["result_url"]).text == cb.get(job["result_url"]).text
        assert not (data / "jobs.sqlite3").exists()  # neither replica fell back to SQLite
        assert cb.delete(job["status_url"]).json()["status"] == "deleted"
        assert ca.get(job["status_url"]).status_code == 404
        assert not (data / "jobs" / job["id"]).exists()
        for log in ("a.log", "b.log"):  # the DSN is kept out of the logs
            assert pg_url not in (tmp_path / log).read_text()


def test_sigkill_of_the_holder_hands_the_job_to_another_replica(pg_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    pdf = make_pdf(tmp_path / "six.pdf", pages=PAGES)
    with FakeOpenAIServer(latency=0.5, max_concurrent=1) as fake, ExitStack() as stack:
        replicas = [stack.enter_context(replica(data, pg_url, fake, n)) for n in ("a", "b")]
        with httpx.Client(base_url=replicas[0].url, trust_env=False, timeout=30) as c:
            job = c.post("/v1/jobs", files={"file": ("six.pdf", pdf.read_bytes())}).json()
        wait_cached(data, job["id"], 2)
        with psycopg.connect(pg_url) as conn:
            (owner,) = conn.execute("SELECT owner FROM jobs WHERE id=%s", (job["id"],)).fetchone()
        holder, other = sorted(replicas, key=lambda r: f"worker {owner}" not in r.log.read_text())
        assert f"worker {owner}" in holder.log.read_text()
        holder.kill()
        before = cached_pages(data, job["id"])
        assert 2 <= len(before) < PAGES, before
        with httpx.Client(base_url=other.url, trust_env=False, timeout=30) as c:
            final = wait_job(c, job["id"])
            markdown = c.get(job["result_url"]).text
    assert final["status"] == "done" and final["pages_done"] == PAGES
    assert final["pages_cached"] == len(before)
    assert all(f"page {i}" in markdown for i in range(1, PAGES + 1))
    after = [p for p, boot in runs(pg_url, job["id"]) if boot != owner]
    assert len(after) == len(set(after)), after  # each page computed once by the other replica
    assert not set(after) & before and set(after) | before == set(range(PAGES)), (before, after)
    with psycopg.connect(pg_url) as conn:
        state, last = conn.execute("SELECT state, owner FROM jobs WHERE id=%s", (job["id"],)).fetchone()
    assert state == "done" and last != owner


def test_database_restart_mid_run_loses_nothing(pg_cluster, pg_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    pdf = make_pdf(tmp_path / "six.pdf", pages=PAGES)
    with (
        FakeOpenAIServer(latency=0.3, max_concurrent=1) as fake,
        replica(data, pg_url, fake, "a") as a,
        httpx.Client(base_url=a.url, trust_env=False, timeout=60) as c,
    ):
        job = c.post("/v1/jobs", files={"file": ("six.pdf", pdf.read_bytes())}).json()
        wait_cached(data, job["id"], 1)
        pg_cluster.restart()
        final = wait_job(c, job["id"])
        second = c.post("/v1/jobs", files={"file": ("again.pdf", pdf.read_bytes())}).json()
        assert wait_job(c, second["id"])["status"] == "done"
    assert final["status"] == "done" and final["pages_done"] == PAGES
    pages = [p for p, _ in runs(pg_url, job["id"])]
    assert sorted(pages) == list(range(PAGES))  # every page once, none lost


def holder_of(
    url: str, job_id: str, replicas: list[ServiceProcess]
) -> tuple[ServiceProcess, ServiceProcess, str]:
    """(the replica holding ``job_id``, the other one, its boot id) from the job's ``owner``."""
    with psycopg.connect(url) as conn:
        (owner,) = conn.execute("SELECT owner FROM jobs WHERE id=%s", (job_id,)).fetchone()
    holder, other = sorted(replicas, key=lambda r: f"worker {owner}" not in r.log.read_text())
    assert f"worker {owner}" in holder.log.read_text()
    return holder, other, owner


def wait_log(svc: ServiceProcess, text: str, timeout: float = 30.0) -> bool:
    return wait_until(lambda: text in svc.log.read_text(), f"{text!r} in {svc.log}", timeout)


def test_delete_on_another_replica_stops_the_running_job(pg_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    pdf = make_pdf(tmp_path / "six.pdf", pages=PAGES)
    with FakeOpenAIServer(latency=0.5, max_concurrent=1) as fake, ExitStack() as stack:
        replicas = [stack.enter_context(replica(data, pg_url, fake, n)) for n in ("a", "b")]
        with httpx.Client(base_url=replicas[0].url, trust_env=False, timeout=30) as c:
            job = c.post("/v1/jobs", files={"file": ("six.pdf", pdf.read_bytes())}).json()
        wait_cached(data, job["id"], 1)
        holder, other, _ = holder_of(pg_url, job["id"], replicas)
        with httpx.Client(base_url=other.url, trust_env=False, timeout=30) as c:
            assert c.delete(job["status_url"]).json() == {"id": job["id"], "status": "cancelled"}
            assert wait_log(holder, f"job {job['id']} was cancelled elsewhere")
            job_dir = data / "jobs" / job["id"]
            wait_until(lambda: not job_dir.exists(), f"{job_dir} removed by the holder")  # files dropped
            assert c.get(job["status_url"]).json()["status"] == "cancelled"
        assert len(cached_pages(data, job["id"])) == 0


def test_a_replica_whose_lease_was_taken_stops_and_keeps_the_files(pg_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    pdf = make_pdf(tmp_path / "six.pdf", pages=PAGES)
    with FakeOpenAIServer(latency=0.5, max_concurrent=1) as fake, ExitStack() as stack:
        replicas = [stack.enter_context(replica(data, pg_url, fake, n)) for n in ("a", "b")]
        with httpx.Client(base_url=replicas[0].url, trust_env=False, timeout=30) as c:
            job = c.post("/v1/jobs", files={"file": ("six.pdf", pdf.read_bytes())}).json()
        wait_cached(data, job["id"], 1)
        holder, other, owner = holder_of(pg_url, job["id"], replicas)
        with psycopg.connect(pg_url, autocommit=True) as conn:  # what a stalled holder finds on waking
            conn.execute(
                "UPDATE jobs SET owner='gone', lease_until=lease_until-3600 WHERE id=%s", (job["id"],)
            )
        assert wait_log(holder, f"job {job['id']} was lost elsewhere")
        with httpx.Client(base_url=other.url, trust_env=False, timeout=30) as c:
            final = wait_job(c, job["id"])
            markdown = c.get(job["result_url"]).text
    assert final["status"] == "done" and final["pages_done"] == PAGES
    assert all(f"page {i}" in markdown for i in range(1, PAGES + 1))
    assert cached_pages(data, job["id"]) == set(range(PAGES))
