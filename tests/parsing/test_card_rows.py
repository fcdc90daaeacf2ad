"""Issue 22 class 7: a grid of cards is read row by row, an article's columns column by column
(:mod:`ocrstack.parsing.card_rows` inside the block order of :mod:`ocrstack.parsing.reading_order`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.parsing.reading_order import order_blocks
from ocrstack.parsing.types import Block, Category
from support.pdfs import text_pdf


def _b(x0: float, y0: float, x1: float, y1: float, text: str) -> Block:
    return Block((x0, y0, x1, y1), Category.TEXT, text=text)


def _card(x: float, y: float, n: int) -> list[Block]:
    """A card: a title line, an equation, a paragraph (the olmOCR sample's mathfuncs shape)."""
    return [
        _b(x, y, x + 330, y + 44, f"{n}. title"),
        _b(x + 100, y + 115, x + 300, y + 160, f"{n} equation"),
        _b(x, y + 223, x + 800, y + 338, f"{n} paragraph"),
    ]


def test_a_two_by_two_grid_of_cards_reads_row_by_row() -> None:
    blocks = _card(200, 400, 1) + _card(1110, 400, 2) + _card(200, 850, 3) + _card(1110, 850, 4)
    out = [b.text for b in order_blocks(blocks[::-1], provider_order=False)]
    assert out == [
        f"{n} {part}" if part != "title" else f"{n}. title"
        for n in (1, 2, 3, 4)
        for part in ("title", "equation", "paragraph")
    ]


def test_an_article_whose_columns_pause_at_one_height_reads_column_by_column() -> None:
    """Two columns (gutter 60 px) that both break for a heading at the same height: the break
    (40 px) is less than the gutter, so this is no grid."""
    left = [_b(100, 100, 800, 600, "L1"), _b(100, 640, 800, 1200, "L2")]
    right = [_b(860, 100, 1560, 600, "R1"), _b(860, 640, 1560, 1200, "R2")]
    assert [b.text for b in order_blocks(right + left, provider_order=False)] == ["L1", "L2", "R1", "R2"]
    # the same with a wide break but the second band's columns starting at different heights
    left = [_b(100, 100, 800, 600, "L1"), _b(100, 700, 800, 1200, "L2")]
    right = [_b(860, 100, 1560, 600, "R1"), _b(860, 800, 1560, 1200, "R2")]
    assert [b.text for b in order_blocks(right + left, provider_order=False)] == ["L1", "L2", "R1", "R2"]


def _cards_pdf(path: Path) -> Path:
    names = ("Alpha card", "Beta card", "Gamma card", "Delta card")
    runs = []
    for name, (x, y) in zip(names, ((60, 520), (420, 520), (60, 280), (420, 280)), strict=True):
        runs.append((name, x, y, 14.0, "Helvetica"))
        for k in range(6):
            line = f"line {k} of the {name.lower()} says what it holds in words"
            runs.append((line, x, y - 30 - 14 * k, 10.0, "Helvetica"))
    return text_pdf(path, runs, page=(792, 612))


@pytest.mark.slow
def test_a_made_page_of_four_cards_reads_row_by_row(tmp_path: Path) -> None:
    pytest.importorskip("rapidocr")
    from ocrstack.parsing.options import ParseOptions
    from ocrstack.parsing.run import pipeline

    pdf = _cards_pdf(tmp_path / "cards.pdf")
    pipeline.run(ParseOptions(inputs=(pdf,), output=tmp_path / "out"), progress=False, echo=lambda s: None)
    md = (tmp_path / "out" / "cards.md").read_text(encoding="utf-8")
    at = [md.find(name) for name in ("Alpha card", "Beta card", "Gamma card", "Delta card")]
    assert -1 not in at and at == sorted(at), md
