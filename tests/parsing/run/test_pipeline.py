"""Pipeline orchestration (ocrstack.parsing.run.pipeline) with counting fake providers on generated images:
resume, changed settings, --force, partial failure, fatal server errors, validation."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from ocrstack.core.errors import CheckFailed, PartialSuccess, ServerRejected, UsageError
from ocrstack.parsing.engines import LayoutProvider, Recognizer
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import pipeline
from ocrstack.parsing.run.outcomes import Status
from ocrstack.parsing.stages import Parser
from ocrstack.parsing.types import Block, Category, PageImage
from support.inputs import multipage_tiff, paper


class FakeLayout(LayoutProvider):
    name = "fake-layout"
    gives_order = False

    def __init__(self, blocks=None):
        self.calls = 0
        self.blocks = blocks

    def detect(self, page: PageImage) -> list[Block]:
        self.calls += 1
        w, h = page.size
        if self.blocks is not None:
            return [Block(b.bbox, b.category, b.score, b.order, b.label) for b in self.blocks]
        return [
            Block((0, 0, w, h / 2), Category.TEXT, 0.9, 0, "text"),
            Block((0, h / 2, w, h), Category.FIGURE, 0.8, 1, "figure"),
        ]


class FakeRecognizer(Recognizer):
    name = "fake-ocr"
    structured = False

    def __init__(self, fail_on: set[int] = frozenset(), exc: Exception | None = None):
        self.calls: list[int] = []
        self.fail_on = fail_on
        self.exc = exc

    def recognize(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        self.calls.append(page.index)
        if page.index in self.fail_on:
            raise self.exc or RuntimeError(f"cannot read page {page.index}")
        for b in blocks:
            if b.category is not Category.FIGURE:
                b.text = f"words of page {page.index + 1} <x"
        return blocks


def _run(tmp_path, opts=None, layout=None, rec=None, **kw):
    options = opts or ParseOptions(inputs=(tmp_path / "doc.tif",), output=tmp_path / "out", **kw)
    parser = Parser(options, layout=layout or FakeLayout(), recognizer=rec or FakeRecognizer())
    return pipeline.run(options, progress=False, echo=lambda s: None, parser=parser), parser


def test_writes_markdown_blocks_json_and_figures(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 3)
    summary, parser = _run(tmp_path, save_layout_images=True)
    out = tmp_path / "out"
    md = (out / "doc.md").read_text()
    assert md.index("words of page 1") < md.index("words of page 2") < md.index("words of page 3")
    assert "&lt;x" in md  # escaped
    data = json.loads((out / "doc.blocks.json").read_text())
    assert data["complete"] is True and data["layout"] == "fake-layout" and data["recognizer"] == "fake-ocr"
    assert [p["page"] for p in data["pages"]] == [1, 2, 3]
    b0 = data["pages"][0]["blocks"]
    assert {"bbox", "category", "score", "order", "text"} <= set(b0[0])
    fig = next(b for b in b0 if b["category"] == "figure")
    crop = Image.open(out / fig["image"])
    assert crop.size[0] > 150 and f"]({fig['image']})" in md
    assert (out / "doc_files" / "p0001-layout.png").is_file()
    assert data["validation"]["ok"] is True
    assert summary.documents[0].pages == 3 and summary.failed_pages == 0


def test_blocks_are_padded_for_cropping_recognizers_only(tmp_path: Path):
    from ocrstack.parsing.stages import CROP_PAD

    seen = []

    class Spy(FakeRecognizer):
        def recognize(self, page, blocks):
            seen.extend(b.bbox for b in blocks)
            return super().recognize(page, blocks)

    parser = Parser(ParseOptions(inputs=(), layout="none"), recognizer=Spy())
    parser.layout = FakeLayout([Block((50, 40, 150, 60), Category.TEXT, 0.9, 0, "text")])
    page = PageImage("x.png", 0, paper((200, 160)), 400, "0" * 64)
    parser.parse_page(page)
    p = 2 * CROP_PAD  # 400 DPI
    assert seen == [(50 - p, 40 - p, 150 + p, 60 + p)]
    Spy.reads_whole_page = True
    seen.clear()
    parser.parse_page(page)
    assert seen == [(50, 40, 150, 60)]


def test_outputs_inside_an_input_directory_are_not_parsed_on_rerun(tmp_path: Path):
    d = tmp_path / "in"
    d.mkdir()
    multipage_tiff(d / "a.tif", 1)
    opts = ParseOptions(inputs=(d,), output=d / "out", save_layout_images=True)
    _run(tmp_path, opts=opts)
    assert list((d / "out" / "a_files").glob("*.png"))  # figure crop + overlay written
    summary, _ = _run(tmp_path, opts=dataclasses.replace(opts, force=True))
    assert [doc.source.name for doc in summary.documents] == ["a.tif"]


def test_rerun_is_up_to_date_and_other_settings_need_force(tmp_path: Path):
    """Issue 10: the same command again is a no-op ("up to date", like make); an output made with
    other settings or from another input is never replaced without --force."""
    multipage_tiff(tmp_path / "doc.tif", 1)
    _run(tmp_path)
    md = (tmp_path / "out" / "doc.md").read_text()
    summary, parser = _run(tmp_path)
    assert summary.documents[0].up_to_date and parser.recognizer.calls == []
    with pytest.raises(UsageError, match="already exists, made from other settings"):
        _run(tmp_path, dpi=100)
    multipage_tiff(tmp_path / "doc.tif", 2)  # the input changed
    with pytest.raises(UsageError, match="made from another input"):
        _run(tmp_path)
    assert (tmp_path / "out" / "doc.md").read_text() == md


def test_force_rerun_reuses_cached_pages(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 3)
    _run(tmp_path)
    _, parser = _run(tmp_path, force=True)
    assert parser.recognizer.calls == []  # every page came from the cache


def test_changed_setting_recomputes(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 2)
    _run(tmp_path)
    _, parser = _run(tmp_path, force=True, max_pixels=20_000)  # changes the rendered pages
    assert sorted(parser.recognizer.calls) == [0, 1]


def test_partial_failure_writes_the_rest_and_rerun_retries_only_failed_page(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 3)
    summary, _ = _run(tmp_path, rec=FakeRecognizer(fail_on={1}))
    err = summary.error()
    assert isinstance(err, PartialSuccess) and err.message.startswith("1 page(s) failed")
    assert summary.status == Status.PARTIAL and summary.failed_pages == 1
    out = tmp_path / "out"
    data = json.loads((out / "doc.blocks.json").read_text())
    assert data["complete"] is False and "cannot read page 1" in data["pages"][1]["error"]
    md = (out / "doc.md").read_text()
    assert "words of page 1" in md and "words of page 3" in md and "page 2 failed" in md
    # no --force needed: the output is incomplete, the rerun resumes
    _, parser = _run(tmp_path)
    assert parser.recognizer.calls == [1]
    assert json.loads((out / "doc.blocks.json").read_text())["complete"] is True


def test_server_rejection_stops_the_run(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 3)
    rec = FakeRecognizer(
        fail_on={0, 1, 2}, exc=ServerRejected("400 Bad Request", "add --trust-request-mm-kwargs")
    )
    with pytest.raises(ServerRejected):
        _run(tmp_path, rec=rec)
    assert rec.calls == [0]  # one worker: stopped at the first page


def test_limit_and_pages(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 5)
    _, parser = _run(tmp_path, pages="2-5", limit=2)
    assert sorted(parser.recognizer.calls) == [1, 2]


def test_validation_fails_when_a_structured_recognizer_returns_a_table_without_structure(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 1)
    table = [Block((0, 0, 200, 80), Category.TABLE, 0.9, 0, "table")]

    class Structured(FakeRecognizer):
        structured = True

    summary, _ = _run(tmp_path, layout=FakeLayout(table), rec=Structured())
    err = summary.error()
    assert isinstance(err, CheckFailed) and "validation failed" in err.message
    data = json.loads((tmp_path / "out" / "doc.blocks.json").read_text())
    failed = [c for c in data["validation"]["checks"] if c["status"] == "fail"]
    assert [c["name"] for c in failed] == ["tables"] and "page 1: 1 table block(s) (0), 0 <table>" in failed[
        0
    ]["detail"]


def test_otsl_answer_for_a_text_block_becomes_a_table_not_raw_tokens(tmp_path: Path):
    pytest.importorskip("ocrstack.parsing.assembly.otsl")
    multipage_tiff(tmp_path / "doc.tif", 1)

    class OtslInText(FakeRecognizer):
        structured = True

        def recognize(self, page, blocks):
            for b in blocks:
                b.text = "<otsl><fcel>a<fcel>b<nl></otsl>" if b.category is Category.TEXT else ""
            return blocks

    _run(tmp_path, rec=OtslInText())
    md = (tmp_path / "out" / "doc.md").read_text()
    assert "<table>" in md and "otsl" not in md and "fcel" not in md


def test_several_inputs_and_directories(tmp_path: Path):
    d = tmp_path / "in"
    d.mkdir()
    multipage_tiff(d / "a.tif", 1)
    Image.new("RGB", (100, 80), "white").save(d / "b.png")
    opts = ParseOptions(inputs=(d,), output=tmp_path / "out")
    summary, _ = _run(tmp_path, opts=opts)
    assert sorted(p.name for p in (tmp_path / "out").glob("*.md")) == ["a.md", "b.md"]
    assert len(summary.documents) == 2


@pytest.mark.slow
@pytest.mark.corpus
def test_odd_scans_parse_upright_with_the_embedded_default(corpus, tmp_path: Path):
    """/Rotate 90 skewed scan (PDFium applies /Rotate; our orientation check must agree and
    not turn it again) and a 3-page G3 fax TIFF with non-square pixels, end to end."""
    opts = ParseOptions(
        inputs=(corpus / "odd_rotate90_skewed_scan.pdf", corpus / "odd_multipage_tiff_fax_g3.tif"),
        output=tmp_path / "out",
        dpi=150,
    )
    summary = pipeline.run(opts, progress=False, echo=lambda s: None)
    assert [d.pages for d in summary.documents] == [1, 3]
    scan = json.loads((tmp_path / "out" / "odd_rotate90_skewed_scan.blocks.json").read_text())
    assert scan["pages"][0]["rotation"] == 0 and scan["pages"][0]["size"][0] < scan["pages"][0]["size"][1]
    assert "LinnSequencer" in (tmp_path / "out" / "odd_rotate90_skewed_scan.md").read_text()
    fax = (tmp_path / "out" / "odd_multipage_tiff_fax_g3.md").read_text()
    assert fax.count("<!-- page ") == 3 and "Pillow" in fax


@pytest.mark.server
def test_openai_recognizer_end_to_end_against_a_local_server(tmp_path: Path):
    """The remote path through the whole pipeline: OTSL tables become <table>, formulas
    $$...$$, text escaped; blocks.json names the served model (fake server on 127.0.0.1)."""
    from ocrstack.parsing import recognition
    from ocrstack.testing.fake_openai import FakeOpenAIServer

    def reply(body, size):
        prompt = json.dumps(body["messages"], ensure_ascii=False)
        if "OTSL" in prompt:
            return "<otsl><ched>k<ched>v<nl><fcel>a<lcel><nl></otsl>"
        if "LaTeX" in prompt:
            return "\\[ x^2 < 1 \\]"
        return "plain words a<b"

    multipage_tiff(tmp_path / "doc.tif", 2)
    blocks = [
        Block((0, 0, 200, 40), Category.TEXT, 0.9, 0, "text"),
        Block((0, 50, 200, 100), Category.TABLE, 0.9, 1, "table"),
        Block((0, 110, 200, 150), Category.FORMULA, 0.9, 2, "equation"),
    ]
    with FakeOpenAIServer(reply=reply) as srv:
        opts = ParseOptions(
            inputs=(tmp_path / "doc.tif",), output=tmp_path / "out", recognizer="openai",
            server_urls=(srv.url,), model="minicpm-ocr",
        )  # fmt: skip
        parser = Parser(opts, layout=FakeLayout(blocks), recognizer=recognition.create("openai", opts))
        assert parser.workers == opts.concurrency
        pipeline.run(opts, progress=False, echo=lambda s: None, parser=parser)
        assert srv.chat_count >= 6
    md = (tmp_path / "out" / "doc.md").read_text()
    assert md.count("<table>") == 2 and 'colspan="2"' in md and "<otsl>" not in md
    assert md.count("$$\nx^2 < 1\n$$") == 2 and "plain words a&lt;b" in md
    data = json.loads((tmp_path / "out" / "doc.blocks.json").read_text())
    assert data["recognizer"] == "openai" and data["model"]["recognizer_served_model"] == "minicpm-ocr"
    assert data["validation"]["ok"] and data["pages"][0]["structured"] is True


def test_output_path_that_is_a_file_fails_before_any_page_is_parsed(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 1)
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    rec = FakeRecognizer()
    with pytest.raises(UsageError, match=r"afile is an existing file.*fix: pass -o a directory"):
        _run(tmp_path, opts=ParseOptions(inputs=(tmp_path / "doc.tif",), output=afile), rec=rec)
    assert rec.calls == [] and afile.read_text() == "keep me"
    # a parent that is a file (NotADirectoryError) and an unwritable place (/proc) are one-line errors too
    for bad in (afile / "sub", Path("/proc/ocrstack-nope")):
        with pytest.raises(UsageError, match="cannot create or write the output directory") as err:
            _run(tmp_path, opts=ParseOptions(inputs=(tmp_path / "doc.tif",), output=bad), rec=rec)
        assert str(bad) in str(err.value) and "\n" not in str(err.value)
    assert rec.calls == []


def test_limit_below_one_is_rejected_before_the_overwrite_check(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 2)
    with pytest.raises(UsageError, match="--limit must be >= 1"):
        _run(tmp_path, limit=0)
    assert not (tmp_path / "out" / "doc.md").exists()
    _run(tmp_path)
    # an existing output must not hide a bad option value
    with pytest.raises(UsageError, match="--limit must be >= 1"):
        _run(tmp_path, limit=0)
    with pytest.raises(UsageError, match="page"):
        _run(tmp_path, pages="3-1")


def test_summary_says_all_pages_from_cache_instead_of_zero_pages_per_second(tmp_path: Path):
    multipage_tiff(tmp_path / "doc.tif", 2)
    _run(tmp_path)
    options = ParseOptions(inputs=(tmp_path / "doc.tif",), output=tmp_path / "out", force=True)
    summary, _ = _run(tmp_path, opts=options)
    lines = summary.lines()
    assert "2 from cache" in lines[0] and "all pages from cache" in lines[0] and "pages/s" not in lines[0]


def test_raster_dpi_is_recorded_where_the_file_declares_it(tmp_path: Path):
    """A fax TIFF of 204x196 DPI is resampled to square 204 DPI pixels by the loader; blocks.json
    records 204 (was null). A PNG without a resolution stays null."""
    im = Image.new("1", (400, 300), 1)
    ImageDraw.Draw(im).rectangle((50, 150, 350, 250), fill=0)
    im.save(tmp_path / "doc.tif", dpi=(204, 196), compression="group3")
    Image.new("RGB", (200, 160), "white").save(tmp_path / "plain.png")
    opts = ParseOptions(inputs=(tmp_path / "doc.tif", tmp_path / "plain.png"), output=tmp_path / "out")
    _run(tmp_path, opts=opts)
    fax = json.loads((tmp_path / "out" / "doc.blocks.json").read_text())["pages"][0]
    assert fax["dpi"] == 204 and any("204 DPI" in n for n in fax["notes"]), fax
    assert json.loads((tmp_path / "out" / "plain.blocks.json").read_text())["pages"][0]["dpi"] is None


@pytest.mark.server
@pytest.mark.parametrize(("keep", "requests"), [(False, 1), (True, 3)])
def test_openai_paratext_blocks_are_not_sent_unless_kept(tmp_path: Path, keep, requests):
    """Header and page-number crops are dropped by assembly, so without --keep-paratext they
    are not sent to the server (fake server on 127.0.0.1 counts the requests)."""
    from ocrstack.parsing import recognition
    from ocrstack.testing.fake_openai import FakeOpenAIServer

    multipage_tiff(tmp_path / "doc.tif", 1)
    blocks = [
        Block((0, 0, 200, 15), Category.HEADER, 0.9, 0, "header"),
        Block((0, 30, 200, 120), Category.TEXT, 0.9, 1, "text"),
        Block((90, 140, 110, 158), Category.PAGE_NUMBER, 0.9, 2, "number"),
    ]
    with FakeOpenAIServer(reply=lambda body, size: "read") as srv:
        opts = ParseOptions(
            inputs=(tmp_path / "doc.tif",), output=tmp_path / "out", recognizer="openai",
            server_urls=(srv.url,), model="minicpm-ocr", keep_paratext=keep,
        )  # fmt: skip
        parser = Parser(opts, layout=FakeLayout(blocks), recognizer=recognition.create("openai", opts))
        parser.recognizer.probe()  # the readiness probe's tiny request; idempotent, run() reuses it
        probe_cost = srv.chat_count
        pipeline.run(opts, progress=False, echo=lambda s: None, parser=parser)
        assert srv.chat_count - probe_cost == requests
    page = json.loads((tmp_path / "out" / "doc.blocks.json").read_text())["pages"][0]
    assert sorted(b["category"] for b in page["blocks"]) == ["header", "page-number", "text"]
    para = [b for b in page["blocks"] if b["category"] != "text"]
    if keep:
        assert all(b["text"] == "read" for b in para)
    else:  # kept in blocks.json, marked as skipped, not as "empty"
        assert all(b["text"] == "" and any("skipped" in w for w in b["warnings"]) for b in para)
        assert not any("empty" in w for b in para for w in b["warnings"])
        checks = json.loads((tmp_path / "out" / "doc.blocks.json").read_text())["validation"]["checks"]
        assert [c["status"] for c in checks if c["name"] == "empty-blocks"] == ["pass"]
