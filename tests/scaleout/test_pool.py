"""Kept page actors on a running cluster (:mod:`ocrstack.scaleout.pool`, issue 23 item 3): the
pool key, and on a one-node ``ray start`` cluster on 127.0.0.1 that a second run finds the first
run's actors (same actor ids, none made, each had begun a run before), that other engine settings
get fresh actors and make the old pool end once idle, that a dead kept actor is made again, and
that ``--ray-pool-ttl`` releases them.

Each Ray run joins the cluster as its own driver (``ray.init`` ... ``ray.shutdown``, as the CLI
does): the test process is connected only to look at the cluster between runs.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import pipeline
from ocrstack.parsing.run.outcomes import RunSummary
from ocrstack.scaleout.pool import NAMESPACE, STALE_GRACE, pool_key
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until

PAGES = 3
#: Seconds one run may take on a loaded 2-core machine (it starts actors when the pool is cold).
RUN_TIMEOUT = 120


def _options(out: Path, **kw) -> ParseOptions:
    base = dict(
        inputs=(), output=out, layout="none", recognizer="openai", server_urls=("http://127.0.0.1:9",),
        model="fake", concurrency=1,
    )  # fmt: skip
    base.update(kw)
    return ParseOptions(**base)  # type: ignore[arg-type]


def test_the_key_ignores_run_settings_and_follows_engine_settings(tmp_path: Path) -> None:
    key = pool_key(_options(tmp_path / "a"))
    run_only = dict(output=tmp_path / "b", dpi=100, text_layer="off", pages="1", cache_dir=tmp_path)
    assert pool_key(_options(tmp_path / "a", force=True, **run_only)) == key
    engine = dict(
        layout="rapid-layout", recognizer="rapidocr", concurrency=2, model="other", max_tokens=7,
        server_urls=("http://127.0.0.1:9", "http://127.0.0.1:10"), ocr_runtime="openvino",
    )  # fmt: skip
    for name, value in engine.items():
        assert pool_key(_options(tmp_path / "a", **{name: value})) != key, name


def test_a_prompt_file_joins_the_key_by_its_content(tmp_path: Path) -> None:
    prompts = tmp_path / "p.yaml"
    prompts.write_text("a: 1\n")
    first = pool_key(_options(tmp_path, prompts=str(prompts)))
    prompts.write_text("a: 2\n")
    assert pool_key(_options(tmp_path, prompts=str(prompts))) != first


# -- on a cluster


@pytest.fixture(scope="module")
def cluster():
    """A one-node ``ray start`` cluster on 127.0.0.1 (2 CPUs: one layout actor + the recognition actor)."""
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ocrstack[ray]')")
    from ocrstack.testing.ray_cluster import LoopbackCluster

    if ray.is_initialized():
        pytest.skip("Ray is already initialised in this process")
    with LoopbackCluster(head_cpus=2) as c:
        yield c


@pytest.fixture
def scan(tmp_path: Path) -> Path:
    """An image-only PDF of PAGES small pages (one server request per page with layout none)."""
    from PIL import Image, ImageDraw

    pages = []
    for n in range(PAGES):
        im = Image.new("RGB", (300, 400 + 10 * n), "white")
        ImageDraw.Draw(im).text((40, 40), f"page {n + 1}", fill="black")
        pages.append(im)
    path = tmp_path / "scan.pdf"
    pages[0].save(path, save_all=True, append_images=pages[1:], resolution=72)
    return path


def _quiet(_line: str) -> None:
    """No output from the runs."""


def _run(options: ParseOptions, executor) -> RunSummary:
    """``pipeline.run`` on a thread, bounded by RUN_TIMEOUT."""
    outcome: dict = {}

    def parse() -> None:
        try:
            outcome["summary"] = pipeline.run(options, progress=False, echo=_quiet, executor=executor)
        except BaseException as exc:  # reported below
            outcome["error"] = exc

    t = threading.Thread(target=parse, daemon=True)
    t.start()
    t.join(RUN_TIMEOUT)
    assert not t.is_alive(), f"the Ray run did not finish within {RUN_TIMEOUT} s"
    assert "error" not in outcome, outcome.get("error")
    summary = outcome["summary"]
    assert [(d.pages, d.failed) for d in summary.documents] == [(PAGES, 0)]
    return summary


def _ids(executor) -> list[str]:
    return [a._actor_id.hex() for a in [*executor.actors, executor.recognition_actor]]


def _kept_names(ray, key: str) -> set[str]:
    return {
        e["name"]
        for e in ray.util.list_named_actors(all_namespaces=True)
        if e["namespace"] == NAMESPACE and e["name"].startswith(f"ocrstack-{key}-")
    }


@pytest.mark.slow
def test_a_second_run_reuses_the_actors_and_other_settings_get_fresh_ones(
    cluster, scan: Path, tmp_path: Path
) -> None:
    import ray

    from ocrstack.scaleout import RayExecutor

    with FakeOpenAIServer(latency=0.0) as srv:
        first = _options(tmp_path / "one", inputs=(scan,), server_urls=(srv.url,))
        second = dataclasses.replace(first, output=tmp_path / "two", dpi=150)
        runs = []
        for opts in (first, second):
            executor = RayExecutor(cluster.address)
            _run(opts, executor)
            assert not ray.is_initialized()  # each run joined and left, as a CLI run does
            runs.append(executor)
            assert executor.pool is not None
        one, two = runs
        assert (one.pool.created, one.pool.found) == (2, 0)
        assert [b["runs"] for b in one.begun] == [0, 0]
        # the second run (other output and DPI: run settings) made nothing and found the same actors
        assert (two.pool.created, two.pool.found) == (0, 2)
        assert _ids(two) == _ids(one)
        assert [b["runs"] for b in two.begun] == [1, 1]
        assert [b["pid"] for b in two.begun] == [b["pid"] for b in one.begun]
        # other engine settings (concurrency: the recognition actor's threads): fresh actors
        other = RayExecutor(cluster.address)
        _run(dataclasses.replace(first, output=tmp_path / "three", concurrency=2), other)
        assert other.pool is not None and (other.pool.created, other.pool.found) == (2, 0)
        assert not set(_ids(other)) & set(_ids(one))
        assert [b["runs"] for b in other.begun] == [0, 0]
        # the kept actors used the second run's DPI (the fake answers name the crop size), as a
        # local run of the same options does
        pipeline.run(dataclasses.replace(second, output=tmp_path / "local"), progress=False, echo=_quiet)
    md = {run: (tmp_path / run / "scan.md").read_bytes() for run in ("one", "two", "local")}
    assert md["two"] == md["local"] != md["one"]
    ray.init(address=cluster.address, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        old, new = pool_key(first), pool_key(dataclasses.replace(first, concurrency=2))
        # the first pool was asked to end once idle for STALE_GRACE s; the new one stays
        wait_until(lambda: not _kept_names(ray, old), "the old settings' pool to end", STALE_GRACE + 30, 0.5)
        assert _kept_names(ray, new) == {f"ocrstack-{new}-pages-0", f"ocrstack-{new}-recognition"}
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_a_dead_kept_actor_is_made_again_and_ttl_zero_releases_the_pool(
    cluster, scan: Path, tmp_path: Path
) -> None:
    import ray

    from ocrstack.scaleout import RayExecutor

    with FakeOpenAIServer(latency=0.0) as srv:
        opts = _options(tmp_path / "one", inputs=(scan,), server_urls=(srv.url,), max_tokens=99)
        key = pool_key(opts)
        warm = RayExecutor(cluster.address)
        _run(opts, warm)
        ray.init(address=cluster.address, _node_ip_address="127.0.0.1", log_to_driver=False)
        try:
            layout = ray.get_actor(f"ocrstack-{key}-pages-0", namespace=NAMESPACE)
            ray.kill(layout)
            wait_until(lambda: len(_kept_names(ray, key)) == 1, "the killed actor's name freed", 30, 0.2)
        finally:
            ray.shutdown()
        again = RayExecutor(cluster.address, pool_ttl=0)
        _run(dataclasses.replace(opts, output=tmp_path / "two"), again)
        assert again.pool is not None and (again.pool.created, again.pool.found) == (1, 1)
        assert [b["runs"] for b in again.begun] == [0, 1]  # a new layout actor, the kept recognition one
    ray.init(address=cluster.address, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:  # --ray-pool-ttl 0: the run killed its actors at the end
        wait_until(lambda: not _kept_names(ray, key), "the ttl-0 run's actors to end", 30, 0.2)
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_kept_actors_end_after_their_ttl(cluster, scan: Path, tmp_path: Path) -> None:
    import ray

    from ocrstack.scaleout import RayExecutor

    with FakeOpenAIServer(latency=0.0) as srv:
        opts = _options(tmp_path / "one", inputs=(scan,), server_urls=(srv.url,), max_tokens=98)
        _run(opts, RayExecutor(cluster.address, pool_ttl=2))
    ray.init(address=cluster.address, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        key = pool_key(opts)
        wait_until(lambda: not _kept_names(ray, key), "the pool to end 2 s after its last call", 30, 0.2)
    finally:
        ray.shutdown()
