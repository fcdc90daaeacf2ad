"""``ocrstack parse --ray`` on a real local Ray (2 CPUs, 127.0.0.1; issue 13 item 1).

One Ray for the module (started once: about 10 s), shut down by the fixture's finalizer. Each test
compares the Markdown of the Ray run byte for byte with the local pipeline's for the same inputs
and settings; the fault tests kill Ray actors mid-run and the driver process mid-run.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ocrstack.parsing import page_cache
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import pipeline
from ocrstack.parsing.run.outcomes import RunSummary
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ocrstack[ray]')")

pytestmark = [pytest.mark.slow]

DOCS = ("en_single_libtasn1_intro.pdf", "tables_googledocs_grid.pdf")
#: Two scans (no text layer: every block goes to the servers; 17 blocks at 100 DPI).
SERVER_DOCS = ("scan_gutenberg_huckfinn_p29.pdf", "scan_linn_brochure_twocol.pdf")
#: Pages of the generated image-only PDF of the fault tests.
PAGES = 8


@pytest.fixture(scope="module")
def ray_address():
    """A local Ray on 127.0.0.1 with 2 CPUs for this module; its GCS address."""
    if ray.is_initialized():
        pytest.skip("Ray is already initialised in this process")
    from ocrstack.scaleout.session import ray_env_kept

    with ray_env_kept():  # a later test joining a LoopbackCluster from this process needs it
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
        try:
            yield ray.get_runtime_context().gcs_address
        finally:
            ray.shutdown()


def _executor():
    from ocrstack.scaleout import RayExecutor

    return RayExecutor("local")


def _run(options: ParseOptions, executor=None) -> RunSummary:
    return pipeline.run(options, progress=False, echo=lambda _line: None, executor=executor)


def _markdown(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.md"))}


def _chat_blocks(*servers: FakeOpenAIServer) -> int:
    """Block requests the servers received (the probe's max_tokens=1 request not counted)."""
    return sum(1 for s in servers for r in s.requests if (r.body.get("max_tokens") or 0) > 1)


@pytest.mark.corpus
def test_embedded_default_same_markdown_as_local(ray_address, corpus: Path, tmp_path: Path) -> None:
    inputs = tuple(corpus / d for d in DOCS)
    local = ParseOptions(inputs=inputs, output=tmp_path / "local", dpi=100)
    remote = dataclasses.replace(local, output=tmp_path / "ray")
    _run(local)
    summary = _run(remote, _executor())
    assert [d.pages for d in summary.documents] == [1, 1]
    assert [d.failed for d in summary.documents] == [0, 0]
    md = _markdown(tmp_path / "ray")
    assert set(md) == {"en_single_libtasn1_intro.md", "tables_googledocs_grid.md"}
    assert md == _markdown(tmp_path / "local")
    assert all(len(v) > 200 for v in md.values())


@pytest.mark.corpus
def test_two_fake_servers_same_markdown_as_local(ray_address, corpus: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        local = ParseOptions(
            inputs=tuple(corpus / d for d in SERVER_DOCS),
            output=tmp_path / "local",
            dpi=100,
            recognizer="openai",
            server_urls=(a.url, b.url),
            model="fake",
        )
        _run(local)
        sent_local = _chat_blocks(a, b)
        _run(dataclasses.replace(local, output=tmp_path / "ray"), _executor())
        sent_ray = _chat_blocks(a, b) - sent_local
    md = _markdown(tmp_path / "ray")
    assert md == _markdown(tmp_path / "local")
    assert b"[" in md["scan_gutenberg_huckfinn_p29.md"]  # the fake's "[WxH] prompt" answers made it in
    # the same blocks were sent, and both servers got some of the Ray run's share
    assert sent_ray == sent_local > 2
    assert all(_chat_blocks(s) > sent_local // 4 for s in (a, b))


@pytest.fixture
def scans(tmp_path: Path) -> Path:
    """An image-only PDF of PAGES small pages (no text layer: every page is one server request
    with layout ``none``), each page with its number drawn on it."""
    from PIL import Image, ImageDraw

    pages = []
    for n in range(PAGES):
        im = Image.new("RGB", (300 + 10 * n, 400), "white")
        ImageDraw.Draw(im).text((40, 40), f"page {n + 1}", fill="black")
        pages.append(im)
    path = tmp_path / "scans.pdf"
    pages[0].save(path, save_all=True, append_images=pages[1:], resolution=72)
    return path


def _whole_page_options(source: Path, out: Path, *urls: str, **kw) -> ParseOptions:
    """One request per page (layout ``none``), one request per server at a time."""
    return ParseOptions(
        inputs=(source,),
        output=out,
        layout="none",
        recognizer="openai",
        server_urls=urls,
        model="fake",
        concurrency=1,
        **kw,
    )


def test_killed_actors_lose_no_page(ray_address, scans: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer(latency=0.8) as a, FakeOpenAIServer(latency=0.8) as b:
        local = _whole_page_options(scans, tmp_path / "local", a.url, b.url)
        _run(local)
        before = _chat_blocks(a, b)
        executor = _executor()
        outcome: dict = {}

        def parse() -> None:
            try:
                outcome["summary"] = _run(dataclasses.replace(local, output=tmp_path / "ray"), executor)
            except BaseException as exc:  # reported by the assertions below
                outcome["error"] = exc

        t = threading.Thread(target=parse)
        t.start()
        wait_until(lambda: _chat_blocks(a, b) > before, "the first block request of the Ray run", 60)
        # pages are in flight on both kinds of actor: kill them (Ray restarts them and retries)
        ray.kill(executor.recognition_actor, no_restart=False)
        ray.kill(executor.actors[0], no_restart=False)
        t.join(timeout=120)
        assert not t.is_alive(), "the Ray run did not finish within 120 s after the kill"
        sent = _chat_blocks(a, b) - before
    assert "error" not in outcome, outcome.get("error")
    doc = outcome["summary"].documents[0]
    assert (doc.pages, doc.failed, doc.cached) == (PAGES, 0, 0)
    assert before == PAGES  # the local run: one request per page
    assert _markdown(tmp_path / "ray") == _markdown(tmp_path / "local")
    assert sent > PAGES, "no request was re-sent: the kill did not hit a page in flight"


def _fingerprint() -> str:
    """The code part of the cache key, read from the sources now (as a new CLI process reads it)."""
    page_cache.code_fingerprint.cache_clear()
    return page_cache.code_fingerprint()


def _quiet(srv: FakeOpenAIServer, seconds: float, limit: float = 30.0) -> None:
    """Wait until ``srv`` received no block request for ``seconds`` (at most ``limit`` s): the
    absence of requests has no event to wait on."""
    deadline = time.monotonic() + limit
    seen = _chat_blocks(srv)
    while time.monotonic() < deadline:
        time.sleep(seconds)
        now = _chat_blocks(srv)
        if now == seen:
            return
        seen = now


def _killed_cli_run(argv: list[str], env: dict, cache: Path) -> None:
    """Start the CLI, SIGKILL it once 2 pages are in the cache."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def two_cached() -> bool:
        assert proc.poll() is None, proc.stdout.read().decode(errors="replace")
        return len(list(cache.rglob("p*.json"))) >= 2

    try:
        wait_until(two_cached, "2 pages in the shared cache", 90, 0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


def test_interrupted_driver_rerun_computes_only_unfinished_pages(
    ray_address, scans: Path, tmp_path: Path, cli_env: dict
) -> None:
    cache = tmp_path / "shared-cache"
    with FakeOpenAIServer(latency=0.6, max_concurrent=1) as srv:
        options = _whole_page_options(scans, tmp_path / "out", srv.url, cache_dir=cache)
        argv = [
            sys.executable, "-m", "ocrstack", "parse", str(scans), "-o", str(options.output),
            "--layout", "none", "--recognizer", "openai", "--server-url", srv.url,
            "--model", "fake", "--concurrency", "1", "--cache-dir", str(cache), "--no-progress",
            "--ray-address", ray_address,
        ]  # fmt: skip
        # the parsing sources join the cache key (code fingerprint): when a checkout shared with
        # other writers changes them while the CLI runs, its pages are keyed for other code and the
        # scenario is repeated (at most 3 times); a static checkout runs it once
        for _attempt in range(3):
            shutil.rmtree(cache, ignore_errors=True)
            code = _fingerprint()
            first = _chat_blocks(srv)
            _killed_cli_run(argv, cli_env, cache)
            if _fingerprint() == code:
                break
        else:
            pytest.fail("the parsing sources changed during each of 3 attempts")
        done = {p: p.stat().st_mtime_ns for p in cache.rglob("p*.json")}
        assert 2 <= len(done) < PAGES, f"{len(done)} pages cached when the driver was killed"
        assert not (options.output / "scans.md").exists()
        # the killed driver's pages in flight finish on the actors it left on the cluster (kept
        # actors: ocrstack.scaleout.pool), whose answers land in the block answer cache under
        # --cache-dir: count from when the server is quiet
        _quiet(srv, seconds=5 * 0.6)
        before = _chat_blocks(srv)
        executor = _executor()
        summary = _run(options, executor)
        sent = _chat_blocks(srv) - before
        total = _chat_blocks(srv) - first
    doc = summary.documents[0]
    assert (doc.pages, doc.cached, doc.failed) == (PAGES, len(done), 0)
    # the rerun computes exactly the pages not cached; no page's request was sent twice over both
    # runs (those the killed run had in flight were answered from the answer cache)
    assert executor.computed == PAGES - len(done)
    assert sent <= executor.computed
    assert total == PAGES
    # the cached pages were read, not rewritten
    assert {p: p.stat().st_mtime_ns for p in done} == done
    assert len(list(cache.rglob("p*.json"))) == PAGES
    blocks = json.loads((options.output / "scans.blocks.json").read_text())
    assert blocks["complete"] is True and len(blocks["pages"]) == PAGES
    assert not list(options.output.rglob("p0*.json"))  # no page cached under OUT: --cache-dir holds them


@pytest.mark.server
def test_api_service_sends_jobs_to_ray(ray_address, scans: Path, tmp_path: Path) -> None:
    """``ocrstack api serve --ray-address ADDRESS``: a job's pages run on the cluster (the service's own
    process computes none), and its Markdown equals the local pipeline's."""
    import httpx

    from api.helpers import wait_job
    from ocrstack.api.process import ServiceProcess

    with FakeOpenAIServer() as srv:
        local = _whole_page_options(scans, tmp_path / "local", srv.url)
        _run(local)
        before = _chat_blocks(srv)
        args = ["--layout", "none", "--recognizer", "openai", "--server-url", srv.url, "--model", "fake",
                "--concurrency", "1", "--ray-address", ray_address]  # fmt: skip
        with ServiceProcess(tmp_path / "data", args, log=tmp_path / "service.log") as svc:
            with httpx.Client(base_url=svc.url, timeout=60, trust_env=False) as client:
                r = client.post(
                    "/v1/jobs", files={"file": ("scans.pdf", scans.read_bytes(), "application/pdf")}
                )
                assert r.status_code == 202, r.text
                job = wait_job(client, r.json()["id"], timeout=120)
                assert job["status"] == "done", job
                md = client.get(f"/v1/jobs/{job['id']}/result", params={"format": "markdown"}).content
                # the job's pages went through Ray actors of the service's job (GCS actor table)
                actors = [
                    a
                    for a in ray._private.state.actors().values()
                    if a.get("ActorClassName", "").endswith("PageWorker")
                    and a["JobID"] != ray.get_runtime_context().get_job_id()
                ]
        sent = _chat_blocks(srv) - before
    assert md == (tmp_path / "local" / "scans.md").read_bytes()
    assert sent == PAGES
    assert actors, "no PageWorker actor of the service ran on the cluster"
