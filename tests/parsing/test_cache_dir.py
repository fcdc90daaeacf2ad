"""``--cache-dir``: the page cache outside the output directory (shared storage for ``--ray``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import pipeline
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.inputs import paper


def _scan(path: Path, pages: int) -> Path:
    images = [paper((200 + 10 * n, 260)) for n in range(pages)]
    images[0].save(path, save_all=True, append_images=images[1:], resolution=72)
    return path


def _blocks(srv: FakeOpenAIServer) -> int:
    """Block requests received (the readiness probe's max_tokens=1 request not counted)."""
    return sum(1 for r in srv.requests if (r.body.get("max_tokens") or 0) > 1)


@pytest.mark.server
def test_cache_dir_holds_the_pages_and_a_rerun_reads_them(tmp_path: Path) -> None:
    pdf = _scan(tmp_path / "scan.pdf", 3)
    cache = tmp_path / "shared" / "cache"
    with FakeOpenAIServer() as srv:
        options = ParseOptions(
            inputs=(pdf,), output=tmp_path / "out", layout="none", recognizer="openai",
            server_urls=(srv.url,), model="fake", cache_dir=cache,
        )  # fmt: skip
        first = pipeline.run(options, progress=False, echo=lambda _s: None)
        sent = _blocks(srv)
        again = pipeline.run(dataclasses.replace(options, force=True), progress=False, echo=lambda _s: None)
        assert sent == 3 and _blocks(srv) == sent  # nothing recomputed
    assert (first.documents[0].cached, again.documents[0].cached) == (0, 3)
    assert len(list(cache.rglob("p000*.json"))) == 3
    assert not list((tmp_path / "out").rglob("p0*.json"))  # no page cached under OUT


def test_cache_dir_flag_parses_to_an_absolute_path(tmp_path: Path, monkeypatch) -> None:
    from ocrstack.parsing.options import from_mapping

    monkeypatch.chdir(tmp_path)
    assert from_mapping({"cache_dir": "c"}).cache_dir == tmp_path / "c"
    assert from_mapping({}).cache_dir is None
