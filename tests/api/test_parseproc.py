"""Jobs parse in a child process per worker thread at a lower CPU priority (``--parse-nice``;
:mod:`ocrstack.api.parseproc`): the parse does not run in the service process, the child has the
nice level asked for, page runs and metrics come back to the service, a child that dies fails only
its job, and a killed service takes its parse process with it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client import generate_latest

from ocrstack.api import jobrun
from ocrstack.api.metrics import Metrics
from ocrstack.api.parseproc import MetricsRelay, ParseProcess, _replay
from ocrstack.api.process import ServiceProcess
from ocrstack.api.store import JobStore, StoreUnavailable
from ocrstack.api.worker import Worker
from ocrstack.parsing.options import ParseOptions
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until


def test_relayed_metric_calls_land_on_the_services_metrics(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "data")
    metrics = Metrics(store.counts)
    sent: list[tuple] = []
    relay = MetricsRelay(sent.append)
    relay.pages.labels("computed").inc()
    relay.stage_seconds.labels("recognition").observe(0.25)
    relay.pages_in_flight.inc()
    relay.pages_in_flight.dec()
    relay.page_failures.inc(2)
    for msg in sent:
        assert msg[0] == "metric"
        _replay(metrics, *msg[1:])
    text = generate_latest(metrics.registry).decode()
    assert 'ocrstack_pages_processed_total{source="computed"} 1.0' in text
    assert 'ocrstack_page_stage_seconds_sum{stage="recognition"} 0.25' in text
    assert "ocrstack_pages_in_flight 0.0" in text and "ocrstack_page_failures_total 2.0" in text
    with pytest.raises(ValueError, match="not a relayed metric call"):
        _replay(metrics, "pages", ("computed",), "set", 5)
    store.close()


def _running(pid: int) -> bool:
    """The process exists and is no zombie (a container's init may reap late, or never)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _worker(tmp_path: Path, url: str, nice: int) -> tuple[Worker, JobStore, Metrics]:
    store = JobStore(tmp_path / "data")
    metrics = Metrics(store.counts)
    base = ParseOptions(inputs=(), layout="none", recognizer="openai", server_urls=(url,), concurrency=1)
    return Worker(store, metrics, base, nice=nice), store, metrics


def _submit(store: JobStore, png: Path, worker: Worker) -> str:
    upload = store.upload_tmp()
    upload.write_bytes(png.read_bytes())
    job = store.create(upload=upload, name="a.png", filename="a.png", options={}, pages_total=1)
    worker.wake()
    return job.id


def _ended(store: JobStore, job_id: str):
    job = store.get(job_id)
    return job if job is not None and job.state in ("done", "partial", "failed", "cancelled") else None


@pytest.mark.server
def test_a_job_parses_in_the_child_at_the_nice_level_and_reports_back(
    tmp_path: Path, tiny_png: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def here(*args: object, **kwargs: object) -> None:
        raise AssertionError("the job was parsed in the service process")

    monkeypatch.setattr(jobrun, "compute", here)  # the child, a fresh interpreter, has the real one
    with FakeOpenAIServer() as srv:
        worker, store, metrics = _worker(tmp_path, srv.url, nice=7)
        worker.start()
        try:
            assert worker.ready.wait(60), worker.error
            (pid,) = worker.parse_pids()
            assert pid != os.getpid()
            assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 7)
            job_id = _submit(store, tiny_png, worker)
            job = wait_until(lambda: _ended(store, job_id), "the job ended", timeout=60)
        finally:
            worker.stop()
    assert job.state == "done", job
    assert [(page, boot) for _, page, boot in store.page_runs(job_id)] == [(0, store.boot)]
    text = generate_latest(metrics.registry).decode()
    assert 'ocrstack_pages_processed_total{source="computed"} 1.0' in text
    assert f'ocrstack_recognizer_request_seconds_count{{server="{srv.url}"}}' in text
    assert wait_until(lambda: not _running(pid), "the parse process ended with its thread")
    store.close()


@pytest.mark.server
def test_a_parse_process_that_dies_fails_its_job_and_the_next_job_runs(
    tmp_path: Path, tiny_png: Path
) -> None:
    with FakeOpenAIServer(latency=120, probe_latency=0.0) as srv:  # the first job's page waits
        worker, store, _ = _worker(tmp_path, srv.url, nice=5)
        worker.start()
        try:
            assert worker.ready.wait(60), worker.error
            (pid,) = worker.parse_pids()
            first = _submit(store, tiny_png, worker)
            wait_until(
                lambda: any(int(r.body.get("max_tokens") or 2) > 1 for r in srv.requests), "a page request"
            )
            os.kill(pid, signal.SIGKILL)
            job = wait_until(lambda: _ended(store, first), "the first job ended", timeout=30)
            assert job.state == "failed" and "the parse process exited (-9)" in job.error, job
            srv.config.latency = 0.0
            second = _submit(store, tiny_png, worker)
            assert (
                wait_until(lambda: _ended(store, second), "the second job ended", timeout=60).state == "done"
            )
            assert worker.parse_pids() != [pid]  # a new parse process
        finally:
            worker.stop()
    store.close()


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        out |= {int(c) for c in (task / "children").read_text().split()}
    return out


@pytest.mark.server
def test_a_killed_service_takes_its_parse_process_with_it(tmp_path: Path) -> None:
    with FakeOpenAIServer() as srv:
        args = ["--recognizer", "openai", "--server-url", srv.url, "--layout", "none", "--parse-nice", "3"]
        svc = ServiceProcess(tmp_path / "data", args).start()
        try:
            children = _children(svc.pid)
            assert children, "the service started no parse process"
            assert "parse process" in svc.log.read_text() and "at nice +3" in svc.log.read_text()
            svc.kill()  # SIGKILL: no clean-up runs in the service
            for child in children:
                wait_until(lambda c=child: not _running(c), f"process {child} ended", timeout=10)
        finally:
            svc.stop()


def test_the_service_parses_at_parse_nice_and_in_process_with_ray(tmp_path: Path) -> None:
    from ocrstack.api.app import create_app
    from ocrstack.api.config import ServiceConfig

    assert ServiceConfig().parse_nice == 10
    app = create_app(ServiceConfig(data_dir=tmp_path / "a", parse_nice=4))
    assert app.state.service.worker.nice == 4
    ray = create_app(ServiceConfig(data_dir=tmp_path / "b", parse_nice=4, ray="local"))
    assert ray.state.service.worker.nice is None  # the pages run on Ray's workers


class _Recorder:
    """The worker side of :meth:`ParseProcess.run`: page runs kept; the first of job ``fail`` raises."""

    def __init__(self, fail: str, exc: Exception) -> None:
        self.fail, self.exc, self.pages = fail, exc, []
        self.metrics = Metrics(lambda: {})

    def cancelled(self, job_id: str) -> bool:
        return False

    def page_ran(self, job_id: str, page: int) -> None:
        if job_id == self.fail:
            raise self.exc
        self.pages.append((job_id, page))


@pytest.mark.parametrize(
    "exc", [sqlite3.OperationalError("database or disk is full"), StoreUnavailable("gone", "wait")]
)
def test_a_failed_page_record_keeps_the_pipe_in_step_with_the_child(exc: Exception) -> None:
    """Before, the error left the first job's end in the pipe and the next job took it as its own
    (the disk-full security case: a job after the DELETEs failed "out of space" on a freed disk)."""
    parent, child = multiprocessing.Pipe()
    proc = ParseProcess(ParseOptions(inputs=()), nice=0)
    proc._conn = parent
    first, second = (SimpleNamespace(id=i) for i in ("job-1", "job-2"))
    for msg in [
        ("page", "job-1", 0),
        ("page", "job-1", 1),
        ("end", "job-1", jobrun.Outcome("done", done=2)),
        ("end", "job-0", jobrun.Outcome("failed")),  # of no job running: dropped
        ("page", "job-2", 0),
        ("end", "job-2", jobrun.Outcome("done", done=1)),
    ]:
        child.send(msg)
    worker = _Recorder("job-1", exc)
    with pytest.raises(type(exc)):
        proc.run(first, ParseOptions(inputs=()), worker)
    sent = [child.recv()[0] for _ in range(2) if child.poll(5)]
    assert sent == ["run", "cancel"], sent  # the child stops the job
    assert proc.run(second, ParseOptions(inputs=()), worker) == jobrun.Outcome("done", done=1)
    assert worker.pages == [("job-2", 0)]
    parent.close()
    child.close()
