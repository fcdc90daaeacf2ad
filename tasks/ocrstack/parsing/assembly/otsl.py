"""OTSL (Optimized Table Structure Language) to HTML ``<table>``.

OTSL is the table language MiniCPM-OCR emits for table blocks (guide 7: the
prompt "请识别图中的表格并输出 OTSL" answers ``<otsl>...</otsl>``). Definition:
Lysak et al., "Optimized Table Tokenization for Table Structure Recognition",
https://arxiv.org/abs/2305.03393, and docling-core's OTSL handling:

* ``<fcel>`` a cell with content (the text follows the token),
* ``<ecel>`` an empty cell,
* ``<lcel>`` "left-looking": merges with the cell on its left (column span),
* ``<ucel>`` "up-looking": merges with the cell above (row span),
* ``<xcel>`` "cross": merges with both (inner cell of a 2-D span),
* ``<nl>`` end of row,
* ``<ched>`` column header, ``<rhed>`` row header, ``<srow>`` section row:
  content cells like ``<fcel>``; the headers render as ``<th>``,
* ``<otsl>``/``</otsl>`` wrappers, an optional ``<caption>...</caption>`` and
  docling ``<loc_N>`` location tokens (dropped).

Model output is not always well formed. This converter never raises on it
(docling issues 2467 and 3452 are the classes of bug it avoids):

* ragged rows are padded with empty cells to the widest row;
* ``<lcel>`` in column 0 / ``<ucel>`` in row 0 (nothing to merge with) and
  ``<xcel>`` with no neighbour become empty cells;
* spans are computed per origin cell in any column, and always form
  non-overlapping rectangles: a continuation cell that would make a span
  non-rectangular is emitted as its own empty cell instead;
* text that follows a continuation token is appended to the cell it merges
  into, so no recognised text is lost;
* all cell text is HTML-escaped (a ``<`` in a cell cannot open a tag);
* a grid that padding would make larger than :data:`MAX_GRID_SLOTS` (very ragged rows: one
  row of thousands of cells beside thousands of one-cell rows) is not padded: each row keeps
  its own cells, spans unresolved, so cost follows the input's length, not its square.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

#: Tokens that continue a neighbouring cell's span.
SPAN_TOKENS = ("lcel", "ucel", "xcel")
#: Tokens rendered as ``<th>``.
HEADER_TOKENS = ("ched", "rhed")
#: Most slots (rows x widest row) of a padded grid. A large real table (200 rows of 50 columns:
#: 10,000 slots) is far below it; beyond it the padded grid would cost time and memory quadratic
#: in the model's output (4,000 one-cell rows beside one 4,000-cell row: 16 M slots; the
#: review's finding on ``otsl_cells`` after the hardening issue).
MAX_GRID_SLOTS = 250_000

_CELL_TOKEN = re.compile(r"<(fcel|ecel|lcel|ucel|xcel|ched|rhed|srow|nl)>")
_WRAPPER = re.compile(r"</?otsl>|<loc_\d+>")
_OTSL_SPAN = re.compile(r"<otsl>(.*?)(?:</otsl>|$)", re.DOTALL)


@dataclass(frozen=True)
class Cell:
    """One HTML cell: top-left grid position, spans, text (unescaped) and whether it is a header."""

    row: int
    col: int
    rowspan: int
    colspan: int
    text: str
    header: bool = False


def _captions(text: str) -> tuple[list[str], str]:
    """The texts of ``<caption>...</caption>`` in ``text`` (stripped) and ``text`` without them; an
    unclosed ``<caption>`` stays. ``str.find``, not a lazy ``<caption>(.*?)</caption>``: that one
    scanned to the end from every unclosed ``<caption>``, O(n^2) (the hardening issue, item 1)."""
    found, out, pos = [], [], 0
    while (start := text.find("<caption>", pos)) >= 0 and (end := text.find("</caption>", start + 9)) >= 0:
        found.append(text[start + 9 : end].strip())
        out.append(text[pos:start])
        pos = end + 10
    out.append(text[pos:])
    return found, "".join(out)


def parse_otsl(otsl: str) -> tuple[list[list[tuple[str, str]]], str]:
    """Split OTSL into rows of ``(token, text)`` and return ``(rows, caption)``.

    Wrappers and ``<loc_N>`` tokens are dropped, empty rows (``<nl><nl>``)
    skipped, a last row without ``<nl>`` kept. Text before the first cell
    token becomes an implicit ``fcel`` so nothing is lost. Never raises.
    """
    caption_parts, rest = _captions(otsl)
    body = _WRAPPER.sub("", rest)
    rows: list[list[tuple[str, str]]] = []
    row: list[tuple[str, str]] = []
    pieces = _CELL_TOKEN.split(body)
    # pieces = [lead, tok1, text1, tok2, text2, ...]
    lead = pieces[0].strip()
    if lead:
        row.append(("fcel", lead))
    for i in range(1, len(pieces), 2):
        token, text = pieces[i], pieces[i + 1].strip()
        if token == "nl":
            if row:
                rows.append(row)
            row = []
            if text:  # text between <nl> and the next cell token
                row.append(("fcel", text))
            continue
        row.append((token, text))
    if row:
        rows.append(row)
    return rows, " ".join(p for p in caption_parts if p)


def otsl_cells(otsl: str) -> tuple[list[Cell], int, int]:
    """Return ``(cells, n_rows, n_cols)``: the non-overlapping cells that tile the OTSL grid.

    Each grid slot is owned by exactly one origin: ``lcel`` takes the owner of
    its left neighbour, ``ucel`` of the one above, ``xcel`` of the left one
    (else the one above); a continuation with no neighbour owns itself as an
    empty cell. An origin's span is the largest rectangle of slots it owns
    that starts at its own slot (columns first, then rows); owned slots outside
    that rectangle become empty cells. Cells are in row-major order.
    """
    rows, _ = parse_otsl(otsl)
    n_rows = len(rows)
    n_cols = max((len(r) for r in rows), default=0)
    if n_rows * n_cols > MAX_GRID_SLOTS:
        return _unpadded(rows), n_rows, n_cols
    grid = [[r[c] if c < len(r) else ("ecel", "") for c in range(n_cols)] for r in rows]

    owner: list[list[tuple[int, int]]] = [[(r, c) for c in range(n_cols)] for r in range(n_rows)]
    extra_text: dict[tuple[int, int], list[str]] = {}
    for r in range(n_rows):
        for c in range(n_cols):
            token, text = grid[r][c]
            if token == "lcel" and c > 0:
                owner[r][c] = owner[r][c - 1]
            elif token == "ucel" and r > 0:
                owner[r][c] = owner[r - 1][c]
            elif token == "xcel" and c > 0:
                owner[r][c] = owner[r][c - 1]
            elif token == "xcel" and r > 0:
                owner[r][c] = owner[r - 1][c]
            if token in SPAN_TOKENS and text:
                extra_text.setdefault(owner[r][c], []).append(text)

    covered = [[False] * n_cols for _ in range(n_rows)]
    cells: list[Cell] = []
    for r in range(n_rows):
        for c in range(n_cols):
            if covered[r][c]:
                continue
            me = (r, c)
            if owner[r][c] != me:
                # Owned by an origin whose rectangle does not reach here: its own empty cell.
                covered[r][c] = True
                cells.append(Cell(r, c, 1, 1, ""))
                continue
            colspan = 1
            while c + colspan < n_cols and owner[r][c + colspan] == me and not covered[r][c + colspan]:
                colspan += 1
            rowspan = 1
            while r + rowspan < n_rows and all(
                owner[r + rowspan][k] == me and not covered[r + rowspan][k] for k in range(c, c + colspan)
            ):
                rowspan += 1
            for rr in range(r, r + rowspan):
                for cc in range(c, c + colspan):
                    covered[rr][cc] = True
            token, text = grid[r][c]
            parts = ([text] if text else []) + extra_text.get(me, [])
            cells.append(Cell(r, c, rowspan, colspan, " ".join(parts), header=token in HEADER_TOKENS))
    return cells, n_rows, n_cols


def _unpadded(rows: list[list[tuple[str, str]]]) -> list[Cell]:
    """One 1x1 cell per token, row by row, no padding and no spans (see :data:`MAX_GRID_SLOTS`)."""
    return [
        Cell(r, c, 1, 1, text, header=token in HEADER_TOKENS)
        for r, row in enumerate(rows)
        for c, (token, text) in enumerate(row)
    ]


def otsl_to_html(otsl: str) -> str:
    """Convert one OTSL table to an HTML ``<table>`` string (one line, no whitespace between tags).

    Args:
        otsl: OTSL text, with or without the ``<otsl>``/``</otsl>`` wrappers.
    Returns:
        ``<table>[<caption>..</caption>]<tr><td>..</td>..</tr>..</table>``; ``rowspan``/
        ``colspan`` attributes only when > 1; ``<th>`` for ``ched``/``rhed``; text
        HTML-escaped. An input without cells gives ``<table></table>``.
    Never raises on malformed OTSL (see the module docstring for the repair rules).
    """
    _, caption = parse_otsl(otsl)
    cells, n_rows, _ = otsl_cells(otsl)
    out = ["<table>"]
    if caption:
        out.append(f"<caption>{html.escape(caption, quote=False)}</caption>")
    by_row: list[list[Cell]] = [[] for _ in range(n_rows)]
    for cell in cells:
        by_row[cell.row].append(cell)
    for row_cells in by_row:
        out.append("<tr>")
        for cell in row_cells:
            tag = "th" if cell.header else "td"
            attrs = ""
            if cell.rowspan > 1:
                attrs += f' rowspan="{cell.rowspan}"'
            if cell.colspan > 1:
                attrs += f' colspan="{cell.colspan}"'
            out.append(f"<{tag}{attrs}>{html.escape(cell.text, quote=False)}</{tag}>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def contains_otsl(text: str) -> bool:
    """True when ``text`` holds an ``<otsl>`` table or bare OTSL cell tokens (guide 6 check)."""
    return "<otsl>" in text or bool(re.search(r"<(fcel|ecel|ched)>", text))


def replace_otsl(text: str) -> str:
    """Replace every ``<otsl>...</otsl>`` in ``text`` by its HTML table; bare OTSL is converted whole.

    An unterminated ``<otsl>`` (generation cut at ``max_tokens``) is converted up
    to the end of the text. Text outside the tables is returned unchanged.
    Guide 6: the final Markdown must contain no raw ``<otsl>``.
    """
    if "<otsl>" in text:
        return _OTSL_SPAN.sub(lambda m: otsl_to_html(m.group(1)), text)
    if contains_otsl(text):
        return otsl_to_html(text)
    return text
