"""Table structure from word (or OCR line) geometry: rows, columns, spans -> HTML ``<table>``.

Used for born-digital tables the ruling-line finder cannot build (booktabs tables have no
vertical rules; :mod:`ocrstack.parsing.tables.born_digital`) and for scans, whose OCR lines are
the words (:func:`table_from_lines`). No model is involved.

* **Columns**: an x position is a gutter when at most :data:`BRIDGE_SHARE` of the rows have a
  word over it (a header centred over two columns, "Item" over "Animal | Description", does
  not close the gutter under it), or when at most :data:`WEAK_BRIDGE_SHARE` do and at least
  :data:`SPLIT_SHARE` of the rows, and :data:`SPLIT_MIN_ROWS`, have words on both sides of it
  and none over it (section
  rows, "Chemistry" over "4 | Easy", cross the gutter of a row-number column in a third of
  the rows). Gutters narrower than :data:`MIN_GUTTER` character heights (:data:`OCR_GUTTER` OCR box
  heights) are ignored
  (inter-word spaces, monospace). The column boundary goes in the middle of the part of the
  gutter the fewest rows cross (a long cell that bridges a gutter is not cut: it spans).
  Vertical ruling lines that cross no word are column separators too.
* **Rows**: words are clustered into text rows by vertical overlap. When at least
  :data:`DENSE_RULES` of the gaps between text rows hold a horizontal rule (a ruled grid), two
  text rows with no rule between them and at most :data:`WRAP_GAP` line heights apart are one
  row (a cell wrapped over two lines; a group head above a row of slanted column heads is
  further off); otherwise (booktabs: rules only under the header and at the ends) every text
  row is a row.
* **Spans**: a word over a gutter makes its cell span the columns it covers (colspan).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from ocrstack.parsing.types import BBox

#: Share of rows that may have a word over a gutter (spanning headers).
BRIDGE_SHARE = 0.15
#: Share of rows that may cross a gutter that at least SPLIT_SHARE of the rows split (words on
#: both sides, none over it): the olmOCR sample's discoverworld table has 11 section and
#: average rows of 36 over its row-number gutter (31 %), 25 split by it.
WEAK_BRIDGE_SHARE = 0.4
SPLIT_SHARE = 0.5
#: Fewest rows that make such a gutter: in a short table two cells that happen to cross a gap
#: close it (tables_googledocs_grid: 3 of 5 rows split the gap between "Austria" and "France",
#: the centred "EUR (€)" and "8,935,1123" cross it; no column boundary is there).
SPLIT_MIN_ROWS = 6
#: Narrowest gutter, in median word heights: a space is 0.25-0.6 of a (loose) character height.
MIN_GUTTER = 0.8
#: The same for OCR line boxes (:func:`table_from_lines`), in box heights: rapidocr pads its boxes
#: (DB unclip), so a column gap between two boxes is narrower and a box higher than the glyphs'
#: (olmOCR sample olmo2-pg4: boxes 36 px high over 25 px glyphs; the 39 px gap between two
#: figure columns is 24 px between their boxes). Separate boxes on a row are already apart
#: by more than a word space (the detector joins words into one box).
OCR_GUTTER = 0.4
#: Share of the gaps between text rows that must hold a horizontal rule for the table to be
#: a ruled grid (text rows with no rule between them are then one wrapped row). Corpus:
#: tables_zh_debian_reference 16 of 21, booktabs tables 2 of 6.
DENSE_RULES = 0.5
#: Largest gap (line heights) between two text rows that are one wrapped row of a ruled grid.
WRAP_GAP = 1.0
#: A table's figure: digits with separators, a sign, a currency or a percent ("3,423", "$ 4,737",
#: "(12.5)", "-3%", "21.32T": a unit letter after it).
FIGURE = re.compile(r"^[-+−(]?[$€£¥]?\s*\d[\d,.\s]*[%)A-Za-z]?$")
#: Least vertical overlap (fraction of the smaller height) of two words on one text row.
ROW_OVERLAP = 0.5


@dataclass(frozen=True)
class Word:
    """A word or OCR line: ``bbox`` in page pixels and its ``text``."""

    bbox: BBox
    text: str


@dataclass
class GridCell:
    """One cell: top-left grid position, spans, text."""

    row: int
    col: int
    rowspan: int
    colspan: int
    text: str


def _rows(words: Sequence[Word]) -> list[list[Word]]:
    rows: list[list[Word]] = []
    spans: list[tuple[float, float]] = []
    for w in sorted(words, key=lambda w: ((w.bbox[1] + w.bbox[3]) / 2, w.bbox[0])):
        y0, y1 = w.bbox[1], w.bbox[3]
        if spans:
            a0, a1 = spans[-1]
            if min(a1, y1) - max(a0, y0) >= ROW_OVERLAP * min(a1 - a0, y1 - y0):
                rows[-1].append(w)
                spans[-1] = (min(a0, y0), max(a1, y1))
                continue
        rows.append([w])
        spans.append((y0, y1))
    return rows


def _dedupe(ys: Sequence[float], tol: float = 3.0) -> list[float]:
    out: list[float] = []
    for y in sorted(ys):
        if not out or y - out[-1] > tol:
            out.append(y)
    return out


def column_edges(
    words: Sequence[Word],
    box: BBox,
    rules_v: Sequence[float] = (),
    n_rows: int | None = None,
    gutter: float = MIN_GUTTER,
    over: Sequence[Word] = (),
) -> list[float]:
    """Column boundaries (x in page pixels, ascending, ``box`` edges included).

    ``rules_v``: x of vertical ruling lines spanning most of the table; ``n_rows``: text rows
    (default: counted from ``words``); ``over``: more words (header rows) that do not make
    gutters but are counted where a boundary goes in one (the fewest of all rows crossed).
    """
    x0, x1 = int(box[0]), int(box[2]) + 1
    rows = _rows(words)
    n = n_rows or len(rows)
    cover, crossed, split = _tally(rows, _rows(over), x0, x1)
    lh = median(w.bbox[3] - w.bbox[1] for w in words) if words else 1.0
    limit, weak = int(BRIDGE_SHARE * n), int(WEAK_BRIDGE_SHARE * n)
    edges: list[float] = []
    start = None
    # the outer margins of the box are not gutters: only gaps between text count
    left = min((int(w.bbox[0]) for w in words), default=x0)
    right = max((int(w.bbox[2]) for w in words), default=x1)
    for i, c in enumerate(cover + [n + 1]):
        x = x0 + i
        free = left < x < right and (
            c <= limit or (c <= weak and split[i] >= max(SPLIT_SHARE * n, SPLIT_MIN_ROWS))
        )
        if free and start is None:
            start = x
        elif not free and start is not None:
            if x - start >= gutter * lh:
                edges.append(x0 + _least_crossed(crossed, start - x0, i))
            start = None
    for r in rules_v:
        if left < r < right and not any(w.bbox[0] < r < w.bbox[2] for w in words):
            if all(abs(r - e) > gutter * lh for e in edges):
                edges.append(r)
    out = [float(box[0]), *sorted(edges), float(box[2])]
    # a column needs words starting in it in more than BRIDGE_SHARE of the rows: the tail of
    # one long wrapped line past the others' right ends is not a column
    k = 1
    while k < len(out) - 1:
        lo, hi = out[k], out[k + 1]
        starts = sum(1 for row in rows if any(lo <= w.bbox[0] < hi for w in row))
        if starts <= limit:
            del out[k]
        else:
            k += 1
    return out


def _tally(rows: list[list[Word]], over: list[list[Word]], x0: int, x1: int) -> tuple[list[int], ...]:
    """Per pixel column x0..x1 of a table box, as counts of rows: ``cover`` (rows of ``rows``
    with a word over the column), ``crossed`` (the same over ``rows`` and ``over``), ``split``
    (rows of ``rows`` with words left and right of the column and none over it). A word covers
    the columns ``int(x0)`` to ``int(x1)``. Counted with numpy a row at a time (whole rows of
    pixel columns: 4.5 ms a table block in Python loops)."""
    import numpy as np

    size = x1 - x0 + 1
    cover, crossed, split = (np.zeros(size, np.int64) for _ in range(3))
    at = np.arange(size)
    for own, row in [(True, r) for r in rows] + [(False, r) for r in over]:
        hit = np.zeros(size, bool)
        for w in row:
            lo, hi = max(x0, int(w.bbox[0])) - x0, min(x1, int(w.bbox[2]) + 1) - x0
            if hi > lo:  # (a negative end would count from the other side)
                hit[lo:hi] = True
        crossed += hit
        if own:
            first_end = min(int(w.bbox[2]) for w in row) - x0
            last_start = max(int(w.bbox[0]) for w in row) - x0
            cover += hit
            split += ~hit & (first_end < at) & (at < last_start)
    return cover.tolist(), crossed.tolist(), split.tolist()


def _phrases(row: Sequence[Word], gap: float) -> list[Word]:
    """The words of one text row left to right, neighbours on one line (overlapping by half a
    height: a text row also holds a cell's wrapped lines) less than ``gap`` apart joined."""
    out: list[Word] = []
    for w in sorted(row, key=lambda w: w.bbox[0]):
        a = out[-1].bbox if out else None
        line = a is not None and min(a[3], w.bbox[3]) - max(a[1], w.bbox[1]) >= ROW_OVERLAP * min(
            a[3] - a[1], w.bbox[3] - w.bbox[1]
        )
        if out and line and w.bbox[0] - out[-1].bbox[2] < gap:
            a, b = out[-1].bbox, w.bbox
            box = (a[0], min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
            out[-1] = Word(box, f"{out[-1].text} {w.text}")
        else:
            out.append(w)
    return out


def _least_crossed(cover: Sequence[int], lo: int, hi: int) -> float:
    """Middle of the longest run of ``cover[lo:hi]`` at its least value (index into ``cover``)."""
    least = min(cover[lo:hi])
    best, run = (lo, lo), None
    for i in range(lo, hi + 1):
        if i < hi and cover[i] == least:
            run = i if run is None else run
        elif run is not None:
            if i - run > best[1] - best[0]:
                best = (run, i)
            run = None
    return (best[0] + best[1]) / 2


def build_grid(
    words: Sequence[Word],
    box: BBox,
    rules_v: Sequence[float] = (),
    rules_h: Sequence[tuple[float, float, float]] = (),
    gutter: float = MIN_GUTTER,
) -> tuple[list[GridCell], int, int]:
    """Cells of the table in ``box`` from its ``words``; returns (cells, rows, columns).

    ``rules_h``: horizontal rule segments (y, x0, x1) in page pixels. Empty grid positions
    become empty cells. Words in one cell are joined with a space, wrapped lines with a space.
    Column boundaries come from the rows from the first that holds a figure (:data:`FIGURE`) on:
    the header rows above it are laid over the body's columns, spanning those they cover.
    Words of a row closer than a gutter (``gutter`` word heights) are one phrase, placed as one: a
    phrase over a column boundary spans the columns it covers rather than being cut into them
    ("Exploring Combinations and Hill Climbing" across the number columns under it).
    """
    text_rows = _rows(words)
    if not text_rows:
        return [], 0, 0
    # the columns are the body's: header rows (above the first row with a figure) are laid over
    # them; a centred "Year Ended" over three columns does not close their gutters
    first = next((k for k, r in enumerate(text_rows) if any(FIGURE.match(w.text) for w in r)), 0)
    body = text_rows[first:] if len(text_rows) - first >= 2 else text_rows
    heads = [w for r in text_rows[: len(text_rows) - len(body)] for w in r]
    edges = column_edges([w for r in body for w in r], box, rules_v, len(body), gutter, heads)
    lh = median(w.bbox[3] - w.bbox[1] for w in words)
    text_rows = [_phrases(r, gutter * lh) for r in text_rows]
    # one rule per y (a rule drawn as a thin rectangle has two edges); partial rules count
    # (a ruled grid leaves out the rule under a cell spanning two rows only in that column)
    full = _dedupe([r[0] for r in rules_h if r[2] - r[1] >= 0.1 * (box[2] - box[0])])

    def ruled(above: list[Word], below: list[Word]) -> bool:
        top = min(w.bbox[1] for w in below)
        bottom = max(w.bbox[3] for w in above)
        return any(min(bottom, top) - 2 <= y <= max(bottom, top) + 2 for y in full)

    rows = text_rows
    gaps = [ruled(a, b) for a, b in zip(text_rows, text_rows[1:], strict=False)]
    if gaps and sum(gaps) >= DENSE_RULES * len(gaps):
        rows = [list(text_rows[0])]
        for above, row, has_rule in zip(text_rows[:-1], text_rows[1:], gaps, strict=True):
            apart = min(w.bbox[1] for w in row) - max(w.bbox[3] for w in above)
            if has_rule or apart > WRAP_GAP * lh:
                rows.append(list(row))
            else:
                rows[-1].extend(row)
    n_cols = len(edges) - 1
    cells: list[GridCell] = []
    for r, row in enumerate(rows):
        slots: dict[tuple[int, int], list[Word]] = {}
        for w in sorted(row, key=lambda w: (w.bbox[1], w.bbox[0])):
            c0 = next(i for i in range(n_cols) if w.bbox[0] < edges[i + 1] or i == n_cols - 1)
            c1 = next(i for i in range(n_cols) if w.bbox[2] <= edges[i + 1] + 1 or i == n_cols - 1)
            slots.setdefault((c0, max(c0, c1)), []).append(w)
        taken = [False] * n_cols
        spans = sorted(slots)
        merged: list[tuple[int, int, list[Word]]] = []
        for c0, c1 in spans:  # overlapping spans in one row become one cell
            if merged and c0 <= merged[-1][1]:
                a0, a1, ws = merged[-1]
                merged[-1] = (a0, max(a1, c1), ws + slots[(c0, c1)])
            else:
                merged.append((c0, c1, list(slots[(c0, c1)])))
        for c0, c1, ws in merged:
            lines = _rows(ws)
            text = join_wrapped(
                [" ".join(w.text for w in sorted(ln, key=lambda w: w.bbox[0])) for ln in lines]
            )
            cells.append(GridCell(r, c0, 1, c1 - c0 + 1, text))
            for c in range(c0, c1 + 1):
                taken[c] = True
        cells.extend(GridCell(r, c, 1, 1, "") for c in range(n_cols) if not taken[c])
    cells.sort(key=lambda c: (c.row, c.col))
    return cells, len(rows), n_cols


#: Quotes and brackets Chinese text sets without a space next to a CJK character.
OPENING = "“‘（《「"
CLOSING = "”’）》」"


def _cjk(ch: str) -> bool:
    return "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" or "\uf900" <= ch <= "\ufaff"


def join_wrapped(lines: Sequence[str]) -> str:
    """Join the lines of a wrapped cell: a space between them, none between two CJK characters
    (Chinese has no spaces: "...的" + "标准输入" is one phrase)."""
    out = ""
    for ln in (x.strip() for x in lines):
        if not ln:
            continue
        a, b = (out[-1], ln[0]) if out else ("", "")
        tight = not out or (_cjk(a) and (_cjk(b) or b in OPENING)) or (_cjk(b) and a in CLOSING)
        out += ("" if tight else " ") + ln
    return out


def to_html(cells: Sequence[GridCell]) -> str:
    """``<table>`` with one ``<tr>`` per row and ``rowspan``/``colspan`` attributes where > 1;
    cell text HTML-escaped."""
    rows: dict[int, list[GridCell]] = {}
    for c in cells:
        rows.setdefault(c.row, []).append(c)
    out = ["<table>"]
    for r in sorted(rows):
        tds = []
        for c in sorted(rows[r], key=lambda c: c.col):
            attrs = (f' rowspan="{c.rowspan}"' if c.rowspan > 1 else "") + (
                f' colspan="{c.colspan}"' if c.colspan > 1 else ""
            )
            tds.append(f"<td{attrs}>{html.escape(c.text)}</td>")
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</table>")
    return "".join(out)


def table_from_lines(lines: Sequence[tuple[BBox, str]], box: BBox) -> str | None:
    """HTML table from OCR lines ``(bbox, text)`` inside the table block ``box`` (scans).

    Returns None when the geometry shows no table (fewer than 2 rows or 2 columns).
    """
    words = [Word(b, t) for b, t in lines if t.strip()]
    cells, n_rows, n_cols = build_grid(words, box, gutter=OCR_GUTTER)
    if n_rows < 2 or n_cols < 2:
        return None
    return to_html(cells)
