"""The engine protocol (ocrstack.parsing.engines): an engine written as one module plus one
registry line runs through the whole pipeline on the base-class defaults; what it declares
(remote workers, cache-key fields, whole-page reading, probe/close) is what the pipeline uses;
the page's stages are timed in blocks.json."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from PIL import Image

from ocrstack.parsing import layout, page_cache, recognition
from ocrstack.parsing.engines import LayoutProvider, Recognizer
from ocrstack.parsing.options import ParseOptions, validate
from ocrstack.parsing.run import pipeline
from ocrstack.parsing.stages import STAGES, Parser
from ocrstack.parsing.types import Block, Category, PageImage
from support.inputs import paper

ENGINE_MODULE = """
from ocrstack.parsing.engines import Recognizer

CALLS = []


class Shouty(Recognizer):
    name = "shouty"
    remote = True
    cache_fields = frozenset({"max_tokens"})

    def __init__(self, options):
        self.options = options

    @property
    def workers(self):
        return 3

    def probe(self):
        CALLS.append("probe")

    def close(self):
        CALLS.append("close")

    def recognize(self, page, blocks):
        for b in blocks:
            b.text = "HELLO"
        return blocks


def create(options):
    return Shouty(options)
"""


@pytest.fixture()
def shouty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A recognizer added the documented way: one module, one registry line."""
    (tmp_path / "shouty_engine.py").write_text(textwrap.dedent(ENGINE_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(recognition.RECOGNIZERS, "shouty", "shouty_engine:create")
    yield sys.modules.get("shouty_engine")
    sys.modules.pop("shouty_engine", None)


def _png(path: Path) -> Path:
    paper((120, 90)).save(path)
    return path


def test_a_new_engine_is_one_module_and_one_registry_line(tmp_path: Path, shouty):
    src = _png(tmp_path / "a.png")
    opts = ParseOptions(inputs=(src,), output=tmp_path / "out", layout="none", recognizer="shouty")
    validate(opts)  # the declared choices read the registry: the new kind is valid
    summary = pipeline.run(opts, progress=False, echo=lambda s: None)
    import shouty_engine

    assert shouty_engine.CALLS == ["probe", "close"]
    assert (tmp_path / "out" / "a.md").read_text().strip().endswith("HELLO")
    data = json.loads((tmp_path / "out" / "a.blocks.json").read_text())
    assert data["recognizer"] == "shouty" and data["model"] == {"layout": "none", "recognizer": "shouty"}
    # its cache-key contribution: max_tokens joins the key, the openai-only fields do not
    assert data["settings"]["max_tokens"] == opts.max_tokens and data["settings"]["model"] is None
    assert summary.documents[0].pages == 1
    assert Parser(opts).workers == 3


def test_page_timings_name_every_stage(tmp_path: Path, shouty):
    src = _png(tmp_path / "a.png")
    opts = ParseOptions(inputs=(src,), output=tmp_path / "out", layout="none", recognizer="shouty")
    pipeline.run(opts, progress=False, echo=lambda s: None)
    page = json.loads((tmp_path / "out" / "a.blocks.json").read_text())["pages"][0]
    assert set(page["timings"]) == {*(s.name for s in STAGES), "total", "render"}
    assert all(v >= 0 for v in page["timings"].values())
    assert sum(page["timings"][s.name] for s in STAGES) <= page["timings"]["total"] + 1e-3


class _Local(Recognizer):
    name = "local"

    def recognize(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        for b in blocks:
            b.text = "x"
        return blocks


def test_base_class_defaults():
    rec, lay = _Local(), layout.create("none", ParseOptions(inputs=()))
    page = PageImage("p.png", 0, Image.new("RGB", (10, 10), "white"), None, "0" * 64)
    assert rec.orient(page) == (page, 0) and rec.workers == 1 and rec.probe() is None
    assert (rec.remote, rec.reads_whole_page, rec.structured, rec.cache_fields) == (
        False,
        False,
        True,
        frozenset(),
    )
    assert isinstance(lay, LayoutProvider) and lay.gives_order is False and lay.model_info() == {}
    with pytest.raises(NotImplementedError):
        Recognizer().recognize(page, [])


def test_paratext_is_set_aside_only_for_crop_readers():
    class Layout(LayoutProvider):
        name = "two"

        def detect(self, page):
            return [Block((0, 0, 50, 8), Category.HEADER), Block((0, 20, 50, 40), Category.TEXT)]

    seen: list[list[Category]] = []

    class Crops(_Local):
        def recognize(self, page, blocks):
            seen.append([b.category for b in blocks])
            return super().recognize(page, blocks)

    class WholePage(Crops):
        reads_whole_page = True

    page = PageImage("p.png", 0, paper((60, 50)), None, "0" * 64)
    for rec in (Crops(), WholePage()):
        Parser(ParseOptions(inputs=()), layout=Layout(), recognizer=rec).parse_page(page)
    assert seen == [[Category.TEXT], [Category.HEADER, Category.TEXT]]


def test_cache_key_fields_come_from_the_engines():
    from ocrstack.parsing.recognition.openai.recognizer import OpenAIRecognizer

    opts = ParseOptions(inputs=(), recognizer="openai", max_tokens=10)
    assert page_cache.settings(opts)["max_tokens"] is None
    assert page_cache.settings(opts, OpenAIRecognizer.cache_fields)["max_tokens"] == 10


def test_layout_runs_beside_the_text_layer_stage_on_pdf_pages_only(tmp_path: Path):
    """With ``--text-layer auto`` the layout of a PDF page starts on its own thread before the
    text-layer stage; a raster page, ``off``, or a page ``orient`` turned run it in line."""
    import threading

    threads: list[str] = []

    class Where(LayoutProvider):
        name = "where"

        def detect(self, page):
            threads.append(threading.current_thread().name)
            return [Block((0, 0, 10, 10), Category.TEXT, order=0)]

    class Turner(Recognizer):
        name, turn = "turner", False

        def orient(self, page):
            if not self.turn:
                return page, 0
            turned = page.image.rotate(180)
            return PageImage(page.source, page.index, turned, page.dpi, page.source_sha256), 180

        def recognize(self, page, blocks):
            return blocks

    def run(mode: str, dpi: float | None, turn: bool = False) -> str:
        threads.clear()
        rec = Turner()
        rec.turn = turn
        parser = Parser(ParseOptions(inputs=(), text_layer=mode), layout=Where(), recognizer=rec)
        page = PageImage(str(tmp_path / "none.pdf"), 0, paper((20, 20)), dpi, "0" * 64)
        result = parser.parse_page(page)
        assert [b.category for b in result.blocks] == [Category.TEXT]
        return ",".join(threads)

    here = threading.current_thread().name
    assert run("auto", 200.0).startswith("ocrstack-layout")
    assert run("off", 200.0) == here and run("auto", None) == here
    # the page was turned by orient (no sound text layer): the early layout is not used
    assert run("auto", 200.0, turn=True).split(",")[-1] == here
