"""OTSL -> HTML: hand-written tables whose HTML was derived from the grid by hand, plus property tests.

Expected HTML strings below were written by reading each OTSL grid (arXiv 2305.03393 semantics:
lcel merges left, ucel merges up, xcel both), not by running the converter.
"""

from __future__ import annotations

import random
from html.parser import HTMLParser

import pytest

from ocrstack.parsing.assembly.otsl import contains_otsl, otsl_to_html, replace_otsl

CASES = {
    "plain 2x2": (
        "<otsl><fcel>A<fcel>B<nl><fcel>C<fcel>D<nl></otsl>",
        "<table><tr><td>A</td><td>B</td></tr><tr><td>C</td><td>D</td></tr></table>",
    ),
    # docling issue 3452 class: a span that starts in a column other than the first
    "colspan starting in column 1": (
        "<fcel>a<fcel>b<lcel><fcel>c<nl><fcel>d<fcel>e<fcel>f<fcel>g<nl>",
        '<table><tr><td>a</td><td colspan="2">b</td><td>c</td></tr>'
        "<tr><td>d</td><td>e</td><td>f</td><td>g</td></tr></table>",
    ),
    "rowspan in the last column": (
        "<fcel>h1<fcel>h2<fcel>h3<nl><fcel>x<fcel>y<fcel>z<nl><fcel>p<fcel>q<ucel><nl>",
        "<table><tr><td>h1</td><td>h2</td><td>h3</td></tr>"
        '<tr><td>x</td><td>y</td><td rowspan="2">z</td></tr>'
        "<tr><td>p</td><td>q</td></tr></table>",
    ),
    "2-D span with xcel in columns 1-2": (
        "<fcel>a<fcel>b<lcel><nl><fcel>c<ucel><xcel><nl><fcel>d<fcel>e<fcel>f<nl>",
        '<table><tr><td>a</td><td rowspan="2" colspan="2">b</td></tr>'
        "<tr><td>c</td></tr><tr><td>d</td><td>e</td><td>f</td></tr></table>",
    ),
    "two independent spans in one row": (
        "<fcel>a<lcel><fcel>b<lcel><nl><fcel>1<fcel>2<fcel>3<fcel>4<nl>",
        '<table><tr><td colspan="2">a</td><td colspan="2">b</td></tr>'
        "<tr><td>1</td><td>2</td><td>3</td><td>4</td></tr></table>",
    ),
    # docling issue 2467 class: malformed grids must not raise
    "trailing ucel, no final nl": (
        "<fcel>a<fcel>b<nl><fcel>c<ucel>",
        '<table><tr><td>a</td><td rowspan="2">b</td></tr><tr><td>c</td></tr></table>',
    ),
    "lcel in column 0": (
        "<lcel><fcel>a<nl><fcel>b<fcel>c<nl>",
        "<table><tr><td></td><td>a</td></tr><tr><td>b</td><td>c</td></tr></table>",
    ),
    "ucel in row 0": (
        "<ucel><fcel>a<nl>",
        "<table><tr><td></td><td>a</td></tr></table>",
    ),
    "ragged rows padded": (
        "<fcel>a<fcel>b<fcel>c<nl><fcel>d<nl>",
        "<table><tr><td>a</td><td>b</td><td>c</td></tr><tr><td>d</td><td></td><td></td></tr></table>",
    ),
    "non-rectangular span: leftover slot becomes an empty cell": (
        "<fcel>a<lcel><nl><ucel><fcel>b<nl>",
        '<table><tr><td colspan="2">a</td></tr><tr><td></td><td>b</td></tr></table>',
    ),
    "text escaped": (
        "<fcel>x < y & z<fcel>a>b<nl>",
        "<table><tr><td>x &lt; y &amp; z</td><td>a&gt;b</td></tr></table>",
    ),
    "headers as th": (
        "<ched>Name<ched>Age<nl><rhed>Bob<fcel>3<nl>",
        "<table><tr><th>Name</th><th>Age</th></tr><tr><th>Bob</th><td>3</td></tr></table>",
    ),
    "caption and loc tokens": (
        "<otsl><caption>T1</caption><loc_1><loc_2><loc_3><loc_4><fcel>a<nl></otsl>",
        "<table><caption>T1</caption><tr><td>a</td></tr></table>",
    ),
    "text after a continuation token is kept": (
        "<fcel>a<lcel>b<nl>",
        '<table><tr><td colspan="2">a b</td></tr></table>',
    ),
    "empty rows skipped, ecel kept": (
        "<nl><fcel>a<ecel><nl><nl>",
        "<table><tr><td>a</td><td></td></tr></table>",
    ),
    "empty input": ("", "<table></table>"),
    "wrappers only": ("<otsl></otsl>", "<table></table>"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hand_written(name: str) -> None:
    otsl, expected = CASES[name]
    assert otsl_to_html(otsl) == expected


def test_replace_otsl_in_text() -> None:
    text = "before <otsl><fcel>a<nl></otsl> after"
    assert replace_otsl(text) == "before <table><tr><td>a</td></tr></table> after"
    # generation cut at max_tokens: no closing tag
    assert replace_otsl("<otsl><fcel>a<fcel>b") == "<table><tr><td>a</td><td>b</td></tr></table>"
    assert replace_otsl("plain text, x < y") == "plain text, x < y"
    assert "<otsl>" not in replace_otsl("<otsl><fcel>1<nl></otsl><otsl><fcel>2<nl></otsl>")
    assert contains_otsl("<fcel>x") and not contains_otsl("no table")


# ---------------------------------------------------------------- property tests


class _TableReader(HTMLParser):
    """Read an HTML table back into {(row, col): (rowspan, colspan, text, is_header)} (HTML slot rules)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[int, int, str, bool]]] = []
        self._cell: list | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = [int(a.get("rowspan", 1)), int(a.get("colspan", 1)), "", tag == "th"]

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[2] += data

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(tuple(self._cell))
            self._cell = None

    def layout(self) -> tuple[dict, dict]:
        """Place cells on the grid (skip slots taken by rowspans from above); return (cells, slot->origin)."""
        taken: dict[tuple[int, int], tuple[int, int]] = {}
        cells = {}
        for r, row in enumerate(self.rows):
            c = 0
            for rs, cs, text, th in row:
                while (r, c) in taken:
                    c += 1
                cells[(r, c)] = (rs, cs, text, th)
                for rr in range(r, r + rs):
                    for cc in range(c, c + cs):
                        assert (rr, cc) not in taken, f"overlap at {(rr, cc)}"
                        taken[(rr, cc)] = (r, c)
                c += cs
        return cells, taken


def _read(html_text: str) -> tuple[dict, dict]:
    reader = _TableReader()
    reader.feed(html_text)
    reader.close()
    return reader.layout()


def _random_tiling(rng: random.Random, n_rows: int, n_cols: int) -> dict:
    """A random tiling of the grid by rectangles: {(r, c): (rowspan, colspan)}."""
    covered = [[False] * n_cols for _ in range(n_rows)]
    rects = {}
    for r in range(n_rows):
        for c in range(n_cols):
            if covered[r][c]:
                continue
            max_w = 0
            while c + max_w < n_cols and not covered[r][c + max_w]:
                max_w += 1
            w = rng.choice([1, 1, 1, rng.randint(1, max_w)])
            h = rng.choice([1, 1, 1, rng.randint(1, n_rows - r)])
            for rr in range(r, r + h):
                for cc in range(c, c + w):
                    covered[rr][cc] = True
            rects[(r, c)] = (h, w)
    return rects


def _to_otsl(rects: dict, texts: dict, n_rows: int, n_cols: int) -> str:
    tokens = [[""] * n_cols for _ in range(n_rows)]
    for (r, c), (h, w) in rects.items():
        for rr in range(r, r + h):
            for cc in range(c, c + w):
                if (rr, cc) == (r, c):
                    tag, text = texts[(r, c)]
                    tokens[rr][cc] = f"<{tag}>{text}"
                elif rr == r:
                    tokens[rr][cc] = "<lcel>"
                elif cc == c:
                    tokens[rr][cc] = "<ucel>"
                else:
                    tokens[rr][cc] = "<xcel>"
    return "<otsl>" + "".join("".join(row) + "<nl>" for row in tokens) + "</otsl>"


@pytest.mark.parametrize("seed", range(200))
def test_random_grids_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    n_rows, n_cols = rng.randint(1, 7), rng.randint(1, 7)
    rects = _random_tiling(rng, n_rows, n_cols)
    alphabet = "ab<>&\"' 12中文"
    texts = {}
    for pos in rects:
        tag = rng.choice(["fcel", "fcel", "fcel", "ecel", "ched", "rhed", "srow"])
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))).strip() or "x"
        text = "" if tag == "ecel" else word
        texts[pos] = (tag, text)
    cells, _ = _read(otsl_to_html(_to_otsl(rects, texts, n_rows, n_cols)))
    expected = {
        pos: (h, w, texts[pos][1], texts[pos][0] in ("ched", "rhed")) for pos, (h, w) in rects.items()
    }
    assert cells == expected


@pytest.mark.parametrize("seed", range(200))
def test_random_token_soup_gives_a_valid_tiling(seed: int) -> None:
    """Any token sequence (malformed included) yields a table whose cells tile the grid exactly once."""
    rng = random.Random(1000 + seed)
    tokens = ["<fcel>t", "<ecel>", "<lcel>", "<ucel>", "<xcel>", "<nl>", "<ched>h", "<srow>s", "<rhed>r"]
    tokens.append("x<")
    soup = "".join(rng.choice(tokens) for _ in range(rng.randint(0, 40)))
    out = otsl_to_html(soup)
    _, taken = _read(out)
    if not taken:
        return
    n_rows = 1 + max(r for r, _ in taken)
    n_cols = 1 + max(c for _, c in taken)
    assert set(taken) == {(r, c) for r in range(n_rows) for c in range(n_cols)}, soup


def test_very_ragged_grid_is_not_padded() -> None:
    """4,000 one-cell rows beside one 4,000-cell row would pad to 16 M slots (quadratic in the
    output's length); above MAX_GRID_SLOTS every row keeps its own cells and all text stays."""
    from ocrstack.parsing.assembly import otsl

    n = 4_000
    wide = "".join(f"<fcel>w{i}" for i in range(n)) + "<nl>"
    tall = "".join(f"<fcel>t{i}<nl>" for i in range(n))
    assert n * n > otsl.MAX_GRID_SLOTS
    cells, n_rows, n_cols = otsl.otsl_cells(wide + tall)
    assert (n_rows, n_cols) == (n + 1, n)
    assert len(cells) == 2 * n  # one per token: nothing padded
    html_out = otsl_to_html(wide + "<ucel>u<nl>" + tall)
    assert html_out.count("<tr>") == n + 2
    assert "w3999" in html_out and "t3999" in html_out and ">u<" in html_out


def test_grid_at_the_cap_is_still_padded() -> None:
    """A ragged table under the cap keeps today's padding (rows filled to the widest)."""
    cells_html = otsl_to_html("<fcel>a<fcel>b<fcel>c<nl><fcel>d<nl>")
    assert cells_html.count("<td></td>") == 2
