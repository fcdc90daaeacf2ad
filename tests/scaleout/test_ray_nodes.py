"""``parse --ray-address`` on a two-node Ray cluster, the worker node removed mid-run (issue 23
item 3): every page is in the output, once, and the Markdown equals the local pipeline's.

The cluster is two ``ray start`` nodes on 127.0.0.1 (:class:`ocrstack.testing.ray_cluster.LoopbackCluster`,
2 + 2 logical CPUs: the executor's 3 layout actors cannot all fit on the head, so one at least runs
on the worker node), killed with its process group as a machine dies.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

import pytest

from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import pipeline
from ocrstack.testing.fake_openai import FakeOpenAIServer
from ocrstack.testing.ray_cluster import LoopbackCluster
from support.wait import wait_until

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ocrstack[ray]')")

pytestmark = [pytest.mark.slow, pytest.mark.server]

DOCS = 3
PAGES = 4


def _docs(tmp_path: Path) -> tuple[Path, ...]:
    """DOCS image-only PDFs of PAGES small pages, each page with its document and page number."""
    from PIL import Image, ImageDraw

    paths = []
    for d in range(DOCS):
        pages = []
        for n in range(PAGES):
            im = Image.new("RGB", (300 + 10 * n, 400 + 10 * d), "white")
            ImageDraw.Draw(im).text((40, 40), f"doc {d + 1} page {n + 1}", fill="black")
            pages.append(im)
        path = tmp_path / f"doc{d}.pdf"
        pages[0].save(path, save_all=True, append_images=pages[1:], resolution=72)
        paths.append(path)
    return tuple(paths)


def _blocks(*servers: FakeOpenAIServer) -> int:
    return sum(1 for s in servers for r in s.requests if (r.body.get("max_tokens") or 0) > 1)


def _actors_on(node_id: str) -> int:
    return sum(
        1
        for a in ray._private.state.actors().values()
        if a.get("ActorClassName", "").endswith("PageWorker")
        and a.get("State") == "ALIVE"
        and a.get("Address", {}).get("NodeID") == node_id
    )


def test_worker_node_removed_mid_run_loses_no_page(tmp_path: Path) -> None:
    from ocrstack.scaleout import RayExecutor

    if ray.is_initialized():
        pytest.skip("Ray is already initialised in this process")
    with FakeOpenAIServer(latency=0.5) as a, FakeOpenAIServer(latency=0.5) as b:
        local = ParseOptions(
            inputs=_docs(tmp_path), output=tmp_path / "local", layout="none", recognizer="openai",
            server_urls=(a.url, b.url), model="fake", concurrency=1,
        )  # fmt: skip
        pipeline.run(local, progress=False, echo=lambda _l: None)
        before = _blocks(a, b)
        assert before == DOCS * PAGES
        with LoopbackCluster(head_cpus=2, worker_cpus=(2,)) as cluster:
            ray.init(address=cluster.address, _node_ip_address="127.0.0.1", log_to_driver=False)
            try:
                wait_until(lambda: sum(n["Alive"] for n in ray.nodes()) == 2, "the worker node", 60)
                head = "node:__internal_head__"
                (worker,) = [n["NodeID"] for n in ray.nodes() if head not in n["Resources"]]
                executor = RayExecutor(cluster.address)
                outcome: dict = {}

                def parse() -> None:
                    try:
                        remote = dataclasses.replace(local, output=tmp_path / "ray")
                        outcome["summary"] = pipeline.run(
                            remote, progress=False, echo=lambda _l: None, executor=executor
                        )
                    except BaseException as exc:  # reported by the assertions below
                        outcome["error"] = exc

                t = threading.Thread(target=parse)
                t.start()
                wait_until(lambda: _blocks(a, b) > before + 1, "the Ray run's first pages", 60)
                assert _actors_on(worker) >= 1, "no page actor runs on the worker node"
                sent_at_kill = _blocks(a, b) - before
                cluster.kill(1)
                t.join(timeout=90)
                assert not t.is_alive(), "the Ray run did not finish within 90 s after the node was removed"
                alive = sum(n["Alive"] for n in ray.nodes())
            finally:
                ray.shutdown()
    assert sent_at_kill < DOCS * PAGES, "the run had sent every page before the node was removed"
    assert "error" not in outcome, outcome.get("error")
    docs = outcome["summary"].documents
    assert [(d.pages, d.failed, d.cached) for d in docs] == [(PAGES, 0, 0)] * DOCS
    assert alive == 1
    ray_md = {p.name: p.read_bytes() for p in sorted((tmp_path / "ray").glob("*.md"))}
    local_md = {p.name: p.read_bytes() for p in sorted((tmp_path / "local").glob("*.md"))}
    assert len(ray_md) == DOCS and ray_md == local_md


def test_cluster_joined_after_a_local_ray_in_the_same_process(tmp_path: Path) -> None:
    """``--ray`` then ``--ray-address`` from one process (the quick bench's order): the local Ray
    leaves the process's ``RAY_*`` environment as it found it, so the cluster's GCS can reach the
    second driver and its actors live (before the fix, with ``~/.ray/auth_token`` present, every
    actor died "cancelled before it started running")."""
    from ocrstack.scaleout import RayExecutor

    if ray.is_initialized():
        pytest.skip("Ray is already initialised in this process")
    ray_env = {k: v for k, v in os.environ.items() if k.startswith("RAY_")}
    with FakeOpenAIServer(latency=0.0) as a:
        options = ParseOptions(
            inputs=_docs(tmp_path)[:1], output=tmp_path / "local-ray", layout="none", recognizer="openai",
            server_urls=(a.url,), model="fake", concurrency=1,
        )  # fmt: skip
        first = pipeline.run(options, progress=False, echo=lambda _l: None, executor=RayExecutor(num_cpus=2))
        assert {k: v for k, v in os.environ.items() if k.startswith("RAY_")} == ray_env
        with LoopbackCluster(head_cpus=2) as cluster:
            second = pipeline.run(
                dataclasses.replace(options, output=tmp_path / "cluster"), progress=False,
                echo=lambda _l: None, executor=RayExecutor(cluster.address),
            )  # fmt: skip
    assert not ray.is_initialized()
    assert [(d.pages, d.failed) for d in first.documents] == [(PAGES, 0)]
    assert [(d.pages, d.failed) for d in second.documents] == [(PAGES, 0)]
