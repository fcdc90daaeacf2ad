"""Tables without a model (issue 11 item 3): grid geometry on made-up words, and the corpus'
ruled, booktabs and Chinese tables built from their PDFs' ruling lines and text layers.

The expected cells of the corpus tables were copied by hand from the rendered pages
(looked at at 200 DPI) and checked against each PDF's text layer (NAME.txt): e.g. the
googledocs "Population" row reads "273.879.7501" because the footnote mark 1 follows the
number in the layer. Private-use glyphs (the flag emoji after the country names) are not
text and are left out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.parsing import documents
from ocrstack.parsing.tables.born_digital import cells_from_boxes, html_cells, table_html
from ocrstack.parsing.tables.grid import Word, build_grid, join_wrapped, table_from_lines, to_html
from ocrstack.parsing.textlayer.extract import page_text
from ocrstack.parsing.textlayer.stage import printable


def _w(x0: float, y0: float, x1: float, text: str, h: float = 20) -> Word:
    return Word((x0, y0, x1, y0 + h), text)


def test_columns_come_from_gutters_and_a_centred_header_spans_them():
    words = [_w(150, 0, 190, "Item")]  # over the gutter between columns 1 and 2
    for y, row in enumerate(
        [("Animal", "Description", "Price"), ("Gnat", "per gram", "13.65"), ("Gnu", "stuffed", "92.50")]
    ):
        words += [
            _w(100, 40 + 40 * y, 160, row[0]),
            _w(180, 40 + 40 * y, 290, row[1]),
            _w(340, 40 + 40 * y, 390, row[2]),
        ]
    # 7 more body rows so that the one spanning header stays under BRIDGE_SHARE
    for y in range(3, 10):
        words += [
            _w(100, 40 + 40 * y, 150, "a"),
            _w(180, 40 + 40 * y, 250, "b"),
            _w(340, 40 + 40 * y, 380, "c"),
        ]
    cells, n_rows, n_cols = build_grid(words, (90, 0, 400, 460))
    assert (n_rows, n_cols) == (11, 3)
    first = [c for c in cells if c.row == 0]
    assert [(c.col, c.colspan, c.text) for c in first] == [(0, 2, "Item"), (2, 1, "")]
    second = [c.text for c in cells if c.row == 2]
    assert second == ["Gnat", "per gram", "13.65"]


def test_a_space_is_not_a_gutter():
    words = [
        _w(0, 0, 50, "per"),
        _w(58, 0, 110, "gram"),
        _w(200, 0, 260, "1"),
        _w(0, 40, 110, "stuffedstuff"),
        _w(200, 40, 260, "2"),
    ]
    cells, n_rows, n_cols = build_grid(words, (0, 0, 300, 60))
    assert n_cols == 2
    assert [c.text for c in cells if c.row == 0] == ["per gram", "1"]


def test_ruled_rows_join_wrapped_lines_and_booktabs_rows_do_not():
    words = [
        _w(0, 0, 50, "a"),
        _w(200, 0, 260, "first"),
        _w(200, 22, 260, "second"),
        _w(0, 60, 50, "b"),
        _w(200, 60, 260, "x"),
    ]
    ruled = [(-2, 0, 300), (50, 0, 300), (90, 0, 300)]
    cells, n_rows, _ = build_grid(words, (0, -2, 300, 90), rules_h=ruled)
    assert n_rows == 2 and [c.text for c in cells if c.row == 0] == ["a", "first second"]
    cells, n_rows, _ = build_grid(words, (0, -2, 300, 90), rules_h=[(-2, 0, 300), (90, 0, 300)])
    assert n_rows == 3


def test_a_ruled_cells_lines_whose_loose_boxes_touch_stay_lines():
    # odd_encrypted_owner_only_dd0293: a form's notice cell of 4 lines 19 px apart whose loose
    # (ascent to descent) boxes are 23 px high; words that merely touched were one row, read
    # word by word across the lines ("comply The the Services, ...")
    text = [["The", "public", "reporting"], ["the", "data", "needed,"], ["Services,", "at", "whs"]]
    words = [_w(10 + 80 * k, 19 * n, 80 + 80 * k, t, 23) for n, r in enumerate(text) for k, t in enumerate(r)]
    cells, rows, cols, placed = cells_from_boxes([(0, 0, 300, 70), (0, 70, 300, 100)], words)
    assert (rows, cols, placed) == (2, 1, 9)
    assert cells[0].text == "The public reporting the data needed, Services, at whs"


def test_html_escapes_and_writes_spans():
    words = [_w(0, 0, 40, "a<b"), _w(100, 0, 140, "&"), _w(0, 40, 140, "wide")]
    words += [w for y in range(2, 9) for w in (_w(0, 40 * y, 40, "x"), _w(100, 40 * y, 140, "y"))]
    cells, _, n_cols = build_grid(words, (0, 0, 150, 380))
    out = to_html(cells)
    assert n_cols == 2
    assert out.startswith("<table>") and "a&lt;b" in out and "&amp;" in out
    assert html_cells(out)[1] == [("wide", 1, 2)]


def test_cjk_wrapped_lines_join_without_a_space():
    assert join_wrapped(["作为 command2 的", "标准输入"]) == "作为 command2 的标准输入"
    assert join_wrapped(["per", "gram"]) == "per gram"


def test_scan_table_from_ocr_lines_and_none_for_prose():
    lines = [
        ((0, 0, 60, 20), "Name"),
        ((200, 0, 260, 20), "Age"),
        ((0, 40, 60, 60), "Ann"),
        ((200, 40, 230, 60), "31"),
    ]
    assert html_cells(table_from_lines(lines, (0, 0, 300, 60))) == [
        [("Name", 1, 1), ("Age", 1, 1)],
        [("Ann", 1, 1), ("31", 1, 1)],
    ]
    prose = [((0, 0, 280, 20), "one line of text"), ((0, 25, 270, 45), "and its continuation")]
    assert table_from_lines(prose, (0, 0, 300, 45)) is None


def test_a_row_number_column_splits_although_section_rows_cross_it():
    """Issue 22 class 5 (a row-number column merged into the next: "12 Challenge"): section rows
    ("Chemistry") cross the narrow gutter after the numbers in a third of the rows; the rows
    that have words on both sides of it make it a column boundary all the same."""
    words: list[Word] = []
    y = 0
    for section in ("Proteomics", "Chemistry", "Archaeology", "Reactor Lab"):
        words.append(_w(100, y, 200, section))  # crosses the gutter at 122-140
        y += 30
        for k, level in enumerate(("Easy", "Normal", "Challenge")):
            words += [_w(100, y, 112 if k < 2 else 122, str(k + 1)), _w(140, y, 220, level)]
            words += [_w(300, y, 340, f"0.{k}1"), _w(400, y, 440, f"0.{k}2")]
            y += 30
    cells, n_rows, n_cols = build_grid(words, (90, 0, 450, y))
    assert n_cols == 4
    rows = {r: [c for c in cells if c.row == r] for r in range(n_rows)}
    assert [(c.text, c.colspan) for c in rows[0]][:1] == [("Proteomics", 2)]
    assert [c.text for c in rows[3]] == ["3", "Challenge", "0.21", "0.22"]


def test_a_column_boundary_does_not_cut_a_long_cell():
    """The boundary goes where the fewest rows cross the gutter, so the one long first-column
    cell ("Wikipedia & Wikibooks") spans rather than losing its last word to the next column."""
    words = []
    for y in range(8):
        words += [_w(100, 30 * y, 180, f"source{y}"), _w(300, 30 * y, 380, f"type{y}")]
    words += [_w(100, 240, 190, "Wikipedia"), _w(196, 240, 210, "&"), _w(216, 240, 280, "Wikibooks")]
    words += [_w(300, 240, 390, "Encyclopedic")]
    cells, _, n_cols = build_grid(words, (90, 0, 400, 260))
    assert n_cols == 2
    assert [c.text for c in cells if c.row == 8] == ["Wikipedia & Wikibooks", "Encyclopedic"]


def test_a_phrase_over_a_column_boundary_spans_instead_of_being_cut():
    words = []
    for y in range(8):
        words += [_w(100, 30 * y, 160, f"task{y}")]
        words += [_w(x, 30 * y, x + 40, "0.5") for x in (300, 400, 500)]
    # a description in ordinary word spaces across the number columns: the boundaries fall
    # into its word spaces, where no row has ink
    words += [_w(100, 240, 200, "Exploring"), _w(206, 240, 290, "Combinations"), _w(296, 240, 330, "and")]
    words += [_w(336, 240, 380, "Hill"), _w(386, 240, 440, "Climbing")]
    cells, _, n_cols = build_grid(words, (90, 0, 560, 260))
    assert n_cols == 4
    assert [(c.text, c.colspan) for c in cells if c.row == 8] == [
        ("Exploring Combinations and Hill Climbing", 3),
        ("", 1),
    ]


def test_a_cells_wrapped_lines_stay_in_order_beside_a_centred_cell():
    """A label centred beside a cell of two lines joins them into one text row; the second line,
    starting 2 px further left, is no phrase with the first (the Debian table's last row came
    out second line first)."""
    words = [_w(180, 24, 540, "command <<- delimiter", 30)]  # OCR boxes: padded, overlapping
    words += [_w(744, 10, 1466, "first line of the cell", 30), _w(742, 36, 1551, "and its second line", 30)]
    for y in range(2, 9):
        words += [_w(180, 40 * y + 40, 400, f"label{y}", 30), _w(744, 40 * y + 40, 1200, f"text{y}", 30)]
    cells, _, n_cols = build_grid(words, (170, 0, 1560, 420))
    assert n_cols == 2
    assert [c.text for c in cells if c.row == 0] == [
        "command <<- delimiter",
        "first line of the cell and its second line",
    ]


def test_slanted_column_heads_stand_over_their_columns():
    """Column heads set on a slant: each word's box lies over the columns to its right too; it
    is placed by its first character (issue 22 class 5: nine heads collapsed into one cell)."""
    from ocrstack.parsing.tables.born_digital import words_in
    from ocrstack.parsing.textlayer.extract import Char

    chars = []
    for x0, head in ((300, "Procedure"), (360, "Completion"), (420, "Knowledge")):
        # each letter 8 px right of and 5 px above the one before, its box 12 px high
        chars += [
            Char(ch, (x0 + 8 * k, 100 - 5 * k, x0 + 8 * k + 12, 112 - 5 * k)) for k, ch in enumerate(head)
        ]
        chars.append(Char(" ", (0, 0, 0, 0), generated=True))
    for y in range(8):
        for x, v in ((100, f"row{y}"), (300, "0.87"), (360, "0.20"), (420, "0.40")):
            chars += [
                Char(ch, (x + 8 * k, 130 + 30 * y, x + 8 * k + 8, 142 + 30 * y)) for k, ch in enumerate(v)
            ]
            chars.append(Char(" ", (0, 0, 0, 0), generated=True))
    words = words_in(chars, (90, 0, 520, 400))
    assert {w.text: w.bbox for w in words}["Procedure"] == (300, 100, 312, 112)
    cells, _, n_cols = build_grid(words, (90, 0, 520, 400))
    assert n_cols == 4
    assert [c.text for c in cells if c.row == 0] == ["", "Procedure", "Completion", "Knowledge"]


# -- the corpus tables ------------------------------------------------------------------------
#: file -> (table box at 200 DPI in page pixels, as rapid-layout finds it, expected rows)
CASES = {
    "booktabs": (
        "tables_booktabs_ruled_vs_booktabs",
        (675, 1415, 1167, 1658),
        [
            ["", "Item", ""],
            ["Animal", "Description", "Price ($)"],
            ["Gnat", "per gram", "13.65"],
            ["", "each", "0.01"],
            ["Gnu", "stuffed", "92.50"],
            ["Emu", "stuffed", "33.33"],
            ["Armadillo", "frozen", "8.99"],
        ],
    ),
    "ruled": (
        "tables_booktabs_ruled_vs_booktabs",
        (701, 503, 1124, 692),
        [
            ["gnats", "gram", "$13.65"],
            ["", "each", ".01"],
            ["gnu", "stuffed", "92.50"],
            ["emu", "", "33.33"],
            ["armadillo", "frozen", "8.99"],
        ],
    ),
    "googledocs": (
        "tables_googledocs_grid",
        (188, 1138, 1476, 1497),
        [
            ["", "Indonesia", "Germany", "Austria", "France", "Vatican"],
            ["Continent", "Asia", "Europe"],
            ["Capital", "Jakarta", "Berlin", "Vienna", "Paris", "Vatican City"],
            ["Currency", "Rupia", "EUR (€)", "-"],
            ["Population", "273.879.7501", "83,190,5562", "8,935,1123", "67,413,000", "453"],
        ],
    ),
}


def _table(corpus: Path, stem: str, box) -> str:
    pdf = corpus / f"{stem}.pdf"
    (page,) = documents.iter_pages(pdf, dpi=200)
    pt = page_text(pdf, 0, page.size)
    chars = [c for c in pt.chars if printable(c)]
    out = table_html(chars, box, pdf, 0, page.dpi / 72, None, pt.rotation)
    assert out is not None and out.startswith("<table>")
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_corpus_table_cells_match_the_text_layer(corpus, case):
    stem, box, expected = CASES[case]
    rows = html_cells(_table(corpus, stem, box))
    assert [[t for t, _, _ in r] for r in rows] == expected


def test_googledocs_merged_cells_keep_their_spans(corpus):
    stem, box, _ = CASES["googledocs"]
    rows = html_cells(_table(corpus, stem, box))
    assert rows[1][2] == ("Europe", 1, 4)
    assert rows[3][2] == ("EUR (€)", 1, 3)


def test_zh_debian_ruled_table_joins_wrapped_cells(corpus):
    rows = html_cells(_table(corpus, "tables_zh_debian_reference", (158, 210, 1578, 930)))
    texts = [[t for t, _, _ in r] for r in rows]
    assert texts[0] == ["命令常见用法", "说明"]
    assert texts[1] == ["command &", "在子 shell 的后台 中执行 command"]
    assert [
        "command1 2>&1 | command2",
        "通过管道将 command1 的标准输出和标准错误作为 command2 的标准输入（并行执行）",
    ] in texts
    assert texts[-1] == [
        "command <<- delimiter",
        "将 command 的标准输入重定向到下面的命令行，直到遇到“delimiter”"
        "（here document，命令行中开头的制表符会被忽略）",
    ]
    assert len(texts) == 15 and all(len(r) == 2 for r in texts)
    # every word of the block is in some cell: nothing was lost between cells
    truth = (corpus / "tables_zh_debian_reference.txt").read_text(encoding="utf-8").split("\f")[0]
    assert "".join("".join(r) for r in texts).replace(" ", "") in truth.replace(" ", "").replace("\n", "")


def test_ocr_lines_of_a_table_block_become_a_table_but_not_a_page_sized_one():
    """The embedded OCR path (no structured recognizer): a table block's lines are laid on a grid."""
    from ocrstack.parsing.lines.assign import Line, assign_lines
    from ocrstack.parsing.types import Block, Category

    cells = [
        ((0, 0, 60, 20), "Name"),
        ((200, 0, 260, 20), "Age"),
        ((0, 40, 60, 60), "Ann"),
        ((200, 40, 230, 60), "31"),
    ]
    prose = [
        Line((0, 100 + 30 * k, 900, 120 + 30 * k), f"a long line of running text {k}", 1.0) for k in range(20)
    ]
    table = Block((0, 0, 270, 60), Category.TABLE)
    text = Block((0, 100, 900, 700), Category.TEXT)
    out = assign_lines([table, text], [Line(b, t, 0.9) for b, t in cells] + prose, structured=False)
    assert html_cells(out[0].text) == [[("Name", 1, 1), ("Age", 1, 1)], [("Ann", 1, 1), ("31", 1, 1)]]
    assert not any("plain OCR text" in w for w in out[0].warnings)
    # the same cells as the only lines of the page: the block is the whole text area, kept as text
    alone = assign_lines([Block((0, 0, 270, 60), Category.TABLE)], [Line(b, t, 0.9) for b, t in cells])
    assert not alone[0].text.startswith("<table>")
    assert any("plain OCR text" in w for w in alone[0].warnings)


def _tally_loops(rows, over, x0, x1):
    """The per-pixel tally as column_edges counted it in Python loops (the reference)."""
    cover = [0] * (x1 - x0 + 1)
    crossed = [0] * len(cover)
    split = [0] * len(cover)
    for row in rows + over:
        hit = [False] * len(cover)
        for w in row:
            for x in range(max(x0, int(w.bbox[0])), min(x1, int(w.bbox[2]) + 1)):
                hit[x - x0] = True
        first_end = min(int(w.bbox[2]) for w in row) - x0
        last_start = max(int(w.bbox[0]) for w in row) - x0
        own = any(row is r for r in rows)
        for i, h in enumerate(hit):
            crossed[i] += h
            cover[i] += h and own
            split[i] += own and not h and first_end < i < last_start
    return cover, crossed, split


def test_column_tally_counts_as_the_pixel_loops():
    """The numpy tally of column_edges gives the counts of the per-pixel loops, words partly or
    wholly outside the box included."""
    import random

    from ocrstack.parsing.tables.grid import Word, _tally

    rnd = random.Random(3)
    for _ in range(300):
        x0 = rnd.randint(-20, 300)
        x1 = x0 + rnd.randint(0, 400)

        def row(lo: int, hi: int):
            out = []
            for _ in range(rnd.randint(1, 5)):
                a = rnd.uniform(lo - 60, hi + 20)
                out.append(Word((a, 0.0, a + rnd.uniform(-5, 120), 10.0), "w"))
            return out

        rows = [row(x0, x1) for _ in range(rnd.randint(0, 6))]
        over = [row(x0, x1) for _ in range(rnd.randint(0, 2))]
        assert _tally(rows, over, x0, x1) == _tally_loops(rows, over, x0, x1)
