"""Text on sparse pages and in paratext is not lost (issue 10 item 7).

* rapidocr's whole-page detector misses two short 12 pt lines at the top of an otherwise
  blank A4 page (and a fax-like 1-bit page with one short line) that it reads on a crop: a
  page without any line is read again at another scale, an empty block from its own crop;
* paratext that is the page's only text is kept (assembly) and read (a cropping recognizer);
* the title rule for header blocks (large text high on page 1) is measured on the page image,
  so it holds for every recognizer: with ``--recognizer openai`` the masthead of
  en_twocol_ltnews24 is sent to the server and kept as a title.

The pages are drawn here with Pillow and a system TrueType font (DejaVu, fonts-dejavu-core);
a test skips with the reason when the font is absent.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from ocrstack.parsing.assembly.markdown import render_page
from ocrstack.parsing.engines import LayoutProvider, Recognizer
from ocrstack.parsing.lines.assign import Line
from ocrstack.parsing.lines.titles import promote_title_headers
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.recognition.rapidocr.recognizer import RETRY_SCALE, RapidOcrRecognizer
from ocrstack.parsing.types import Block, Category, PageImage
from support.inputs import paper

SERIF = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")
A4 = (8.27, 11.69)  # inches


def font(pt: float, dpi: int = 200) -> ImageFont.FreeTypeFont:
    if not SERIF.is_file():
        pytest.skip(f"{SERIF} not found (Debian package fonts-dejavu-core)")
    return ImageFont.truetype(str(SERIF), round(pt * dpi / 72))


def sparse_page(
    path: Path, dpi: int = 200, mode: str = "RGB", lines=("Hello world", "Second line 2016")
) -> Path:
    """A4 at ``dpi``: ``lines`` of 12 pt text 0.3 inch from the top-left corner, nothing else."""
    img = Image.new(mode, (round(A4[0] * dpi), round(A4[1] * dpi)), "white" if mode == "RGB" else 1)
    d = ImageDraw.Draw(img)
    for k, text in enumerate(lines):
        d.text(
            (round(0.3 * dpi), round(0.3 * dpi) + k * round(16 * dpi / 72)), text, font=font(12, dpi), fill=0
        )
    img.save(path, "PDF", resolution=dpi)
    return path


# ------------------------------------------------------------------ title rule on the page image


def _masthead_page():
    """A first page like en_twocol_ltnews24 (200 DPI): a 36 pt masthead and a body-size subtitle
    (both labelled header by rapid-layout), a body-size running head further down the page
    is not drawn here; 20 body lines of 14 pt."""
    img = Image.new("RGB", (1654, 2339), "white")
    d = ImageDraw.Draw(img)

    def put(xy, text, pt):
        d.text(xy, text, font=font(pt), fill="black")
        return d.textbbox(xy, text, font=font(pt))

    big = Block(put((116, 214), "LaTeX News", 36), Category.HEADER)
    sub = Block(put((118, big.bbox[3] + 14), "Issue 24, February 2016", 12), Category.HEADER)
    body = [put((116, 940 + 50 * k), f"body text of the newsletter, line {k}", 12) for k in range(20)]
    text = Block((116, 940, 1400, body[-1][3]), Category.TEXT)
    return img, [big, sub, text]


def test_title_size_header_high_on_page_one_becomes_a_title_measured_on_the_image():
    img, blocks = _masthead_page()
    changed = promote_title_headers(blocks, img, page_index=0)
    big, sub, _ = blocks
    assert big.category is Category.TITLE and "title-size" in big.warnings[0]
    assert sub.category is Category.TEXT and changed == [big, sub]


def test_title_rule_measures_block_crops_as_the_whole_page_in_grey():
    """Each block is measured on its own crop in grey: the rows of the whole page's grey array
    (the rule no longer copies the page twice), and the same promotions."""
    import numpy as np

    from ocrstack.parsing.lines.titles import _rows_in, ink_rows

    img, blocks = _masthead_page()
    whole = np.asarray(img.convert("L"))
    for b in [*blocks, Block((-5.5, 200.2, 900.7, 330.9), Category.TEXT), Block((3, 3, 4, 4), Category.TEXT)]:
        assert _rows_in(img, b.bbox) == ink_rows(whole, b.bbox)
        assert _rows_in(img.convert("L"), b.bbox) == ink_rows(whole, b.bbox)
    assert any(_rows_in(img, b.bbox) for b in blocks)


def test_title_rule_leaves_later_pages_and_body_size_heads_alone():
    img, blocks = _masthead_page()
    assert promote_title_headers(blocks, img, page_index=1) == []
    assert [b.category for b in blocks[:2]] == [Category.HEADER, Category.HEADER]
    # a running head at body size on page 1 stays a header
    img2 = Image.new("RGB", (1654, 2339), "white")
    d = ImageDraw.Draw(img2)
    head = Block(d.textbbox((362, 100), "Section 3 Options and commands", font=font(12)), Category.HEADER)
    d.text((362, 100), "Section 3 Options and commands", font=font(12), fill="black")
    for k in range(10):
        d.text((356, 513 + 50 * k), f"body line {k} of the page", font=font(12), fill="black")
    body = Block((356, 513, 1500, 1000), Category.TEXT)
    assert promote_title_headers([head, body], img2, page_index=0) == [] and head.category is Category.HEADER


# ------------------------------------------------------------------ paratext that is all the page has


def test_paratext_that_is_the_only_text_of_the_page_is_kept():
    head = Block((60, 60, 600, 140), Category.HEADER, order=0, text="Hello world\nSecond line 2016")
    a = render_page(PageResult(index=0, size=(1654, 2339), blocks=[head]))
    assert "Hello world" in a.markdown and "Second line 2016" in a.markdown and a.dropped_paratext == 0
    assert any("only text of the page" in i for i in a.issues)
    # with body text on the page the running head is dropped as before
    body = Block((60, 300, 1600, 900), Category.TEXT, order=1, text="Body.")
    head2 = Block((60, 60, 600, 140), Category.HEADER, order=0, text="Running head")
    a = render_page(PageResult(index=0, size=(1654, 2339), blocks=[head2, body]))
    assert "Running head" not in a.markdown and a.dropped_paratext == 1


class _Layout(LayoutProvider):
    gives_order = False
    cache_fields = frozenset()
    name = "fixed"

    def __init__(self, blocks):
        self.blocks = blocks

    def detect(self, page):
        return [Block(b.bbox, b.category, 0.9, n, b.category.value) for n, b in enumerate(self.blocks)]


class _Cropping(Recognizer):
    """A cropping recognizer (like openai) that records what it was asked to read."""

    name = "cropping"
    reads_whole_page = False

    def __init__(self):
        self.asked: list[Category] = []

    def recognize(self, page, blocks):
        for b in blocks:
            self.asked.append(b.category)
            b.text = "read"
        return blocks


def _parser(blocks):
    from ocrstack.parsing.stages import Parser

    return Parser(ParseOptions(inputs=()), layout=_Layout(blocks), recognizer=_Cropping())


def test_a_cropping_recognizer_reads_paratext_when_it_is_all_the_page_has():
    page = PageImage(source="x.png", index=2, image=paper((800, 1000)), dpi=200, source_sha256="0" * 64)
    only_head = _parser([Block((40, 40, 400, 90), Category.HEADER)])
    result = only_head.parse_page(page)
    assert only_head.recognizer.asked == [Category.HEADER] and result.blocks[0].text == "read"
    both = _parser([Block((40, 40, 400, 90), Category.HEADER), Block((40, 200, 700, 600), Category.TEXT)])
    both.parse_page(page)
    assert both.recognizer.asked == [Category.TEXT]  # a running head over body text is still skipped


# ------------------------------------------------------------------ rapidocr: read again before giving up


def test_a_page_without_lines_is_read_again_at_another_scale(monkeypatch):
    rec = RapidOcrRecognizer()
    sizes = []

    def read_lines(image, region=False):
        sizes.append(image.size)
        return [] if len(sizes) == 1 else [Line((10, 20, 110, 40), "found", 0.9)]

    monkeypatch.setattr(rec, "read_lines", read_lines)
    lines = rec.read_page_lines(Image.new("RGB", (1000, 1400), "white"))
    assert sizes == [(1000, 1400), (round(1000 * RETRY_SCALE), round(1400 * RETRY_SCALE))]
    assert [ln.text for ln in lines] == ["found"]
    assert lines[0].bbox == tuple(v / RETRY_SCALE for v in (10, 20, 110, 40))  # page pixels


def test_an_empty_block_is_read_again_from_its_own_crop(monkeypatch):
    rec = RapidOcrRecognizer()
    crops = []

    def read_lines(image, region=False):
        crops.append(image.size)
        if image.size in ((800, 1000), (400, 500)):  # the whole page, at either scale: nothing
            return []
        return [Line((8, 8, 208, 38), "Hello world", 0.9)]  # crop pixels

    monkeypatch.setattr(rec, "read_lines", read_lines)
    page = PageImage(
        source="x.png", index=0, image=Image.new("RGB", (800, 1000), "white"), dpi=200, source_sha256="0" * 64
    )
    head = Block((100, 100, 400, 140), Category.HEADER)
    fig = Block((100, 500, 400, 800), Category.FIGURE)
    out = rec.recognize(page, [head, fig])
    assert head.text == "Hello world" and "read again from its own crop" in head.warnings[0]
    assert fig.text == "" and len(out) == 2
    assert crops[:2] == [(800, 1000), (400, 500)] and crops[2] == (316, 56)  # padded by 8 px
    assert head.bbox == (100, 100, 400, 140)  # line (92+8, 92+8, 92+208, 92+38) inside: offset added back


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "mode", "dpi", "lines"),
    [
        ("two-lines-a4", "RGB", 200, ("Hello world", "Second line 2016")),
        ("two-lines-a4-150dpi", "RGB", 150, ("Hello world", "Second line 2016")),
        ("fax-one-line", "1", 200, ("Please call me back",)),
    ],
)
def test_sparse_page_text_comes_out(tmp_path, name, mode, dpi, lines):
    """Real rapid-layout + rapidocr on the drawn pages: every line is in the Markdown and the
    output validates (before issue 10 the first page came out empty: no detection on the
    whole page, the header block empty and dropped)."""
    from ocrstack.parsing.run import pipeline

    pdf = sparse_page(tmp_path / f"{name}.pdf", dpi=dpi, mode=mode, lines=lines)
    opts = ParseOptions(inputs=(pdf,), output=tmp_path / "out", dpi=dpi)
    pipeline.run(opts, progress=False, echo=lambda s: None)
    md = (tmp_path / "out" / f"{name}.md").read_text(encoding="utf-8")
    for text in lines:
        assert text in md, md
    data = json.loads((tmp_path / "out" / f"{name}.blocks.json").read_text())
    assert data["validation"]["ok"], data["validation"]


@pytest.mark.server
@pytest.mark.corpus
def test_openai_sends_the_masthead_of_ltnews24_and_keeps_it_as_title(corpus, tmp_path):
    """``--recognizer openai`` (fake server on 127.0.0.1): the masthead of en_twocol_ltnews24
    page 1, labelled header by rapid-layout, is requested and comes out as a heading; before
    issue 10 only the rapidocr path promoted it (from rapidocr's line heights) and the openai
    path skipped it as paratext."""
    from ocrstack.parsing import documents
    from ocrstack.parsing.assembly.markdown import render_page
    from ocrstack.parsing.recognition import create
    from ocrstack.parsing.stages import Parser
    from ocrstack.testing.fake_openai import FakeOpenAIServer

    (page,) = documents.iter_pages(corpus / "en_twocol_ltnews24.pdf", pages="1", dpi=200)
    with FakeOpenAIServer(reply=lambda body, size: f"masthead {size[0]}x{size[1]}" if size else "ok") as srv:
        opts = ParseOptions(
            inputs=(),
            output=tmp_path / "out",
            recognizer="openai",
            server_urls=(srv.url,),
            model="minicpm-ocr",
        )  # output: the block-answer cache goes under it, fresh per test
        if "text_layer" in {f.name for f in dataclasses.fields(opts)}:  # issue 11: the OCR path only
            opts = dataclasses.replace(opts, text_layer="off")
        with create("openai", opts) as rec:
            result = Parser(opts, recognizer=rec).parse_page(page)
        sizes = [r.image_size for r in srv.requests]
    titles = [b for b in result.blocks if b.category is Category.TITLE and b.bbox[1] < 0.25 * page.size[1]]
    assert titles, [(b.category, b.bbox, b.warnings) for b in result.blocks]
    top = min(titles, key=lambda b: b.bbox[1])
    assert any("title-size" in w for w in top.warnings) and top.text.startswith("masthead ")
    w, h = (int(v) for v in top.text.split()[1].split("x"))
    assert (w, h) in sizes  # the masthead crop went to the server
    assert render_page(result).markdown.startswith(f"## masthead {w}x{h}")


def test_a_short_block_missing_a_row_of_ink_is_read_again_and_formulas_are_not(monkeypatch):
    """150 DPI: the whole-page pass read one of the header's two lines; the block has two rows
    of ink, so its crop is read and, giving two rows, replaces the reading. An empty formula is
    not re-read (a crop of math reads as noise)."""
    rec = RapidOcrRecognizer()
    image = Image.new("RGB", (800, 1000), "white")
    d = ImageDraw.Draw(image)
    d.rectangle((110, 105, 390, 118), fill="black")  # two rows of "ink" in the header block
    d.rectangle((110, 125, 300, 138), fill="black")
    asked = []

    def read_lines(img, region=False):
        asked.append(img.size)
        if img.size == (800, 1000):
            return [Line((110, 104, 390, 119), "Hello world", 0.9)]
        return [Line((10, 5, 290, 20), "Hello world", 0.9), Line((10, 25, 200, 40), "Second line", 0.9)]

    monkeypatch.setattr(rec, "read_lines", read_lines)
    page = PageImage(source="x.png", index=0, image=image, dpi=200, source_sha256="0" * 64)
    head = Block((100, 100, 400, 140), Category.HEADER)
    formula = Block((100, 500, 400, 560), Category.FORMULA)
    rec.recognize(page, [head, formula])
    assert head.text == "Hello world\nSecond line" and "read again" in head.warnings[-1]
    assert formula.text == "" and len(asked) == 2  # the page, then the header's crop only
