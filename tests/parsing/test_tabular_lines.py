"""Issue 22 class 5: a table the layout model labelled text is found from its lines, and a table
block takes in the header rows its box left out (:mod:`ocrstack.parsing.lines.tabular`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.parsing.lines.assign import Line, assign_lines
from ocrstack.parsing.lines.tabular import TABLE_WARNING, tabular, take_headers
from ocrstack.parsing.tables.born_digital import html_cells
from ocrstack.parsing.types import Block, Category
from support.pdfs import text_pdf

STATEMENT = [
    ("Cost of revenue", "178", "141", "138"),
    ("Research and development", "3,423", "2,532", "1,892"),
    ("Sales, general and administrative", "1,136", "876", "680"),
    ("Total", "4,737", "3,549", "2,710"),
]


def _statement(top: float = 100) -> list[Line]:
    """Rows of a statement as a line reader gives them: the label flush left, the figures
    flush right in three columns (a piece per cell)."""
    out = []
    for k, (label, *figures) in enumerate(STATEMENT):
        y = top + 30 * k
        out.append(Line((100, y, 100 + 9 * len(label), y + 20), label, 1.0))
        for right, fig in zip((700, 850, 1000), figures, strict=True):
            out.append(Line((right - 10 * len(fig), y, right, y + 20), fig, 1.0))
    return out


def test_a_statement_is_tabular_and_prose_or_text_columns_are_not() -> None:
    assert tabular(_statement())
    prose = [
        Line((100, 100 + 25 * k, 1000, 120 + 25 * k), "a full line of running text " * 3, 1.0)
        for k in range(9)
    ]
    assert not tabular(prose)
    # three columns of running text side by side: three pieces a row, but long ones
    cols = [
        Line((x, 100 + 25 * k, x + 280, 120 + 25 * k), "six words of text in it", 1.0)
        for k in range(9)
        for x in (100, 420, 740)
    ]
    assert not tabular(cols)
    # pieces in no common column: a list of label-value pairs at random places
    loose = [Line((100 + 37 * k, 100 + 30 * k, 150 + 37 * k, 120 + 30 * k), "a", 1.0) for k in range(4)] * 3
    assert not tabular(loose)


def test_the_header_rows_above_a_table_box_come_in_and_a_caption_stays_out() -> None:
    year = Line((750, 40, 860, 60), "Year Ended", 1.0)
    dates = [Line((x, 70, x + 110, 90), d, 1.0) for x, d in ((600, "Jan 26, 2025"), (750, "Jan 28, 2024"))]
    caption = Line((100, 10, 900, 30), "Table 3: the cost of revenue and the other expenses of the year", 1.0)
    loose = [caption, year, *dates]
    taken, _ = take_headers((90, 100, 1010, 220), loose)
    assert sorted(ln.text for ln in taken) == ["Jan 26, 2025", "Jan 28, 2024", "Year Ended"]
    assert loose == [caption]


def test_assign_lines_makes_the_text_block_a_table_with_its_header() -> None:
    year = Line((950, 60, 1000, 80), "Year Ended", 1.0)  # over the last column
    text = Block((90, 95, 1010, 220), Category.TEXT)
    prose = [
        Line((100, 300 + 25 * k, 1000, 320 + 25 * k), "a line of running text " * 4, 1.0) for k in range(20)
    ]
    out = assign_lines([text, Block((90, 295, 1010, 800), Category.TEXT)], [year, *_statement(), *prose])
    assert out[0].category is Category.TABLE and TABLE_WARNING in out[0].warnings
    rows = [[t for t, _, _ in r] for r in html_cells(out[0].text)]
    assert rows[0][-1] == "Year Ended" and rows[2] == ["Research and development", "3,423", "2,532", "1,892"]
    assert len(out) == 2  # the header line is in the table, not a recovered block


def _statement_pdf(path: Path) -> Path:
    """A page with a paragraph and an unruled statement under it (Helvetica, pypdfium2)."""
    runs = []

    def put(text: str, x: float, y: float, right: bool = False) -> None:
        width = 5.0 * len(text) if right else 0.0  # rough: flush right within a few points
        runs.append((text, x - width, y, 10.0, "Helvetica"))

    words = "the company reports its expenses by function in the statement below for three years".split()
    for k in range(12):
        put(" ".join(words[(k + j) % len(words)] for j in range(14)), 72, 720 - 14 * k)
    put("Year Ended", 430, 530)
    for x, d in ((330, "Jan 26, 2025"), (420, "Jan 28, 2024"), (510, "Jan 29, 2023")):
        put(d, x, 515)
    for k, (label, *figures) in enumerate(STATEMENT):
        put(label, 72, 495 - 16 * k)
        for x, fig in zip((385, 475, 565), figures, strict=True):
            put(fig, x, 495 - 16 * k, right=True)
    for k in range(10):
        put(" ".join(words[(k + j + 3) % len(words)] for j in range(14)), 72, 400 - 14 * k)
    return text_pdf(path, runs)


@pytest.mark.slow
def test_an_unruled_statement_comes_out_as_a_table(tmp_path: Path) -> None:
    """End to end on a made page, from the text layer: the statement's rows are table rows and
    its header rows (paragraphs of their own on this plain page) are in the table. (With
    ``--text-layer off`` the layout model boxes this made page's columns apart; the OCR path's
    rule is the unit test above.)"""
    pytest.importorskip("rapidocr")
    from ocrstack.parsing.options import ParseOptions
    from ocrstack.parsing.run import pipeline

    pdf = _statement_pdf(tmp_path / "statement.pdf")
    pipeline.run(
        ParseOptions(inputs=(pdf,), output=tmp_path / "out"),
        progress=False,
        echo=lambda s: None,
    )
    md = (tmp_path / "out" / "statement.md").read_text(encoding="utf-8")
    start = md.find("<table>")
    assert start >= 0, md
    rows = [[t for t, _, _ in r] for r in html_cells(md[start : md.index("</table>") + 8])]
    assert ["Research and development", "3,423", "2,532", "1,892"] in rows, rows
    assert any("Year Ended" in r for r in rows), rows


def test_figures_in_a_row_are_not_joined_as_contents_page_numbers() -> None:
    """A column of numbers with aligned right edges is also a contents page's shape; joined to
    the nearest line on its left, a statement's "$ | 141" and "141 | 138" became one cell."""
    from ocrstack.parsing.lines.assign import merge_toc_numbers

    lines = [
        Line((100, 100, 300, 120), "Cost of revenue", 1),
        Line((600, 100, 620, 120), "$", 1),
        Line((700, 100, 740, 120), "141", 1),
        Line((850, 100, 890, 120), "138", 1),
        Line((100, 130, 300, 150), "Sales", 1),
        Line((700, 130, 740, 150), "876", 1),
        Line((850, 130, 890, 150), "680", 1),
    ]
    assert sorted(ln.text for ln in merge_toc_numbers(lines)) == sorted(ln.text for ln in lines)
    toc = [Line((100, 100 + 30 * k, 400, 120 + 30 * k), f"Chapter {k}", 1) for k in range(3)]
    toc += [Line((700, 100 + 30 * k, 720, 120 + 30 * k), str(5 + k), 1) for k in range(3)]
    assert sorted(ln.text for ln in merge_toc_numbers(toc)) == ["Chapter 0 5", "Chapter 1 6", "Chapter 2 7"]


def test_a_centred_header_over_the_body_columns_does_not_close_their_gutters() -> None:
    """The columns come from the body rows (from the first row with a figure): dates and a
    "Year Ended" centred over three narrow figure columns sit in them instead of merging them."""
    from ocrstack.parsing.tables.grid import Word, build_grid

    words = [Word((560, 0, 700, 20), "Year Ended")]
    words += [Word((x, 30, x + 130, 50), d) for x, d in ((420, "Jan 26, 2025"), (570, "Jan 28, 2024"))]
    words.append(Word((720, 30, 850, 50), "Jan 29, 2023"))
    for k, (label, *figs) in enumerate(STATEMENT):
        words.append(Word((100, 60 + 30 * k, 300, 80 + 30 * k), label))
        words += [
            Word((r - 50, 60 + 30 * k, r, 80 + 30 * k), f) for r, f in zip((540, 690, 840), figs, strict=True)
        ]
    cells, n_rows, n_cols = build_grid(words, (90, 0, 860, 200))
    assert n_cols == 4
    assert [c.text for c in cells if c.row == 1] == ["", "Jan 26, 2025", "Jan 28, 2024", "Jan 29, 2023"]
    assert [c.text for c in cells if c.row == 3] == ["Research and development", "3,423", "2,532", "1,892"]
