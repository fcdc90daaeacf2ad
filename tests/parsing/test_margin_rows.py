"""Issue 22 class 1 on a single page: a running head or footer set as one spread row of short
pieces (page number, title, chapter; revision, part number, date) is found from the page's lines
(:mod:`ocrstack.parsing.lines.margins`) and dropped like labelled paratext."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.parsing.lines.assign import Line, assign_lines
from ocrstack.parsing.lines.margins import LABEL, margin_rows
from ocrstack.parsing.types import Block, Category
from support.pdfs import text_pdf

H = 1000  # page height; the bands are y < 125 and y > 875


def _body(top: float, n: int, pitch: float = 25) -> list[Line]:
    words = "a line of body text that runs the width"
    return [Line((100, top + pitch * k, 900, top + pitch * k + 20), f"{words} {k}", 1.0) for k in range(n)]


def _row(y: float, *pieces: tuple[float, float, str]) -> list[Line]:
    return [Line((x0, y, x1, y + 20), text, 1.0) for x0, x1, text in pieces]


def test_a_spread_head_and_footer_row_are_found() -> None:
    head = _row(60, (100, 130, "400"), (400, 600, "BRITISH HUSBANDRY."), (820, 900, "[Ch. XIX."))
    foot = _row(930, (100, 250, "Revision: 2.4"), (450, 560, "P/N 119-036"), (760, 900, "10 June 2019"))
    found = margin_rows(head + _body(100, 30) + foot, H)
    assert [(sorted(ln.text for ln in row), cat) for row, cat in found] == [
        (sorted(ln.text for ln in head), Category.HEADER),
        (sorted(ln.text for ln in foot), Category.FOOTER),
    ]


def test_rows_that_are_body_text_stay() -> None:
    # the last row of three narrow columns: short, spread, but at the body's pitch
    cols = [
        Line((x, 130 + 25 * k, x + 240, 150 + 25 * k), f"five words in line {k}", 1.0)
        for k in range(33)
        for x in (100, 380, 660)
    ]
    assert margin_rows(cols, H) == []
    # a spread row too far into the page, a row of long pieces, a row not reaching the right edge
    inner = _row(800, (100, 130, "12"), (820, 900, "Title"))
    assert margin_rows(_body(100, 20) + inner, H) == []
    long = _row(940, (100, 480, "one two three four five six seven"), (520, 900, "x"))
    assert margin_rows(_body(100, 30) + long, H) == []
    short = _row(940, (100, 130, "12"), (500, 600, "Title"))
    assert margin_rows(_body(100, 30) + short, H) == []


def test_assign_lines_makes_the_rows_paratext_blocks() -> None:
    head = _row(60, (100, 130, "400"), (400, 600, "BRITISH HUSBANDRY."), (820, 900, "[Ch. XIX."))
    text = Block((90, 50, 910, 900), Category.TEXT)  # the layout box takes the head in
    out = assign_lines([text], head + _body(100, 30), height=H)
    assert "BRITISH" not in out[0].text and out[0].text.startswith("a line of body text")
    assert [(b.category, b.label, b.text) for b in out[1:]] == [
        (Category.HEADER, LABEL, "400  BRITISH HUSBANDRY.  [Ch. XIX.")
    ]
    # without the page height (a block read from its own crop) nothing is split off
    again = assign_lines([Block((90, 50, 910, 900), Category.TEXT)], head + _body(100, 30))
    assert "BRITISH" in again[0].text


def _book_page(path: Path) -> Path:
    """A US-letter page of Times text with a book's running head and a manual's footer row."""
    runs = [
        (t, x, 730, 11.0, "Times-Roman")
        for t, x in (("212", 72), ("THE HARBOUR MASTER.", 250), ("[Ch. IX.", 500))
    ]
    words = "the tide came in over the sands and the boats of the harbour rose with it slowly".split()
    for k in range(36):
        runs.append(
            (" ".join(words[(k + j) % len(words)] for j in range(13)), 72, 708 - 17 * k, 11.0, "Times-Roman")
        )
    runs += [
        (t, x, 60, 11.0, "Times-Roman")
        for t, x in (("Revision: 2.4", 72), ("P/N 119-036", 280), ("10 June 2019", 470))
    ]
    return text_pdf(path, runs)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "off"])
def test_a_book_page_loses_its_head_and_footer_rows(tmp_path: Path, mode: str) -> None:
    """End to end on a made page, from the text layer and from OCR."""
    pytest.importorskip("rapidocr")
    from ocrstack.parsing.options import ParseOptions
    from ocrstack.parsing.run import pipeline

    pdf = _book_page(tmp_path / "book.pdf")
    opts = ParseOptions(inputs=(pdf,), output=tmp_path / "out", text_layer=mode)
    pipeline.run(opts, progress=False, echo=lambda s: None)
    md = (tmp_path / "out" / "book.md").read_text(encoding="utf-8")
    assert "the tide came in" in md
    for paratext in ("HARBOUR MASTER", "212", "IX", "Revision", "119-036", "June 2019"):
        assert paratext not in md, (paratext, md[:400])
