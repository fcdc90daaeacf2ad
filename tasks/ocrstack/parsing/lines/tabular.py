"""Tables the layout model missed or cut, found from the lines (issue 22 class 5).

Whole-page line readers (rapidocr, the PDF text layer) split a row of a table into pieces at its
column gaps: a piece is a line. So, after lines are given to blocks
(:func:`ocrstack.parsing.lines.assign.assign_lines`):

* a ``text`` block is a table (:func:`tabular`) when at least :data:`MIN_ROWS` of its rows, and
  at least :data:`ROW_SHARE` of them, hold :data:`MIN_PIECES` pieces or more, the pieces stand in
  at least :data:`MIN_COLUMNS` columns (a left or a right edge that :data:`MIN_ROWS` rows share,
  within :data:`ALIGN` line heights: labels are set flush left, figures flush right), and the
  median piece has at most :data:`PIECE_WORDS` words (a statement's rows: "Research and
  development | 3,423 | 2,532 | 1,892"; running text is one piece a line, or a few long ones
  side by side in columns);
* a table block takes in the header rows the layout box left out (:func:`take_headers`): lines
  of no block, or text blocks of nothing else, right above it (at most a line height apart),
  within its width, each line of at most :data:`HEADER_WORDS` words ("Year Ended" over the
  date columns, the group heads "ReACT", "Plan+Execute" over theirs); a caption above a table
  is a sentence and stays out.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median
from typing import TYPE_CHECKING

from ocrstack.parsing.geometry import union
from ocrstack.parsing.reading_order import rows
from ocrstack.parsing.types import Block, Category

if TYPE_CHECKING:
    from ocrstack.parsing.lines.line import Line

MIN_ROWS = 3
MIN_PIECES = 3
ROW_SHARE = 0.5
MIN_COLUMNS = 3
#: Edges closer than this many line heights are one column edge.
ALIGN = 0.5
PIECE_WORDS = 3
HEADER_WORDS = 4
#: Most header rows taken in above a table.
MAX_HEADER_ROWS = 3
#: ``Block.warnings`` entry of a text block turned into a table.
TABLE_WARNING = "text block read as a table: its lines stand in aligned columns"


def _lh(lines: Sequence[Line]) -> float:
    return median(ln.bbox[3] - ln.bbox[1] for ln in lines)


def _columns(grouped: list[list[Line]], tol: float) -> int:
    """Column edges (left or right) shared by at least :data:`MIN_ROWS` rows."""
    found = 0
    for side in (0, 2):
        edges = sorted((ln.bbox[side], k) for k, r in enumerate(grouped) for ln in r)
        start = 0
        for i in range(len(edges) + 1):
            if i == len(edges) or edges[i][0] - edges[start][0] > tol:
                if len({k for _, k in edges[start:i]}) >= MIN_ROWS:
                    found += 1
                start = i
    return found


def tabular(lines: Sequence[Line]) -> bool:
    """The lines of one block stand as a table (see the module docstring)."""
    if len(lines) < MIN_ROWS * MIN_PIECES:
        return False
    grouped = [[lines[i] for i in r] for r in rows([ln.bbox for ln in lines])]
    wide = [r for r in grouped if len(r) >= MIN_PIECES]
    if len(wide) < max(MIN_ROWS, ROW_SHARE * len(grouped)):
        return False
    if median(len(ln.text.split()) for ln in lines) > PIECE_WORDS:
        return False
    return _columns(wide, ALIGN * _lh(lines)) >= MIN_COLUMNS


def _above(lines: Sequence[Line], box: Sequence[float], top: float) -> bool:
    """``lines`` (a line, or a block's lines) are a header row right above a table at ``box``
    whose top is now ``top``: within its width (give or take a line height), at most a line
    height above, short pieces."""
    x0, _, x1, y1 = union([ln.bbox for ln in lines])
    lh = _lh(lines)
    return (
        x0 >= box[0] - lh
        and x1 <= box[2] + lh
        and top - lh <= y1 <= top + 0.5 * lh
        and all(len(ln.text.split()) <= HEADER_WORDS for ln in lines)
    )


def take_headers(
    box: Sequence[float],
    loose: list[Line],
    groups: dict[int, list[Line]] | None = None,
) -> tuple[list[Line], set[int]]:
    """Header rows right above a table at ``box`` (module docstring), the nearest row first:
    lines of ``loose`` (removed from it) and whole ``groups`` (other text blocks' lines by block
    index, as the layer's paragraphs make them: the header's rows are blocks of their own).
    Returns (the lines taken, the indices of the groups taken)."""
    groups = dict(groups or {})
    taken: list[Line] = []
    used: set[int] = set()
    top = box[1]
    for _ in range(MAX_HEADER_ROWS):
        near = [ln for ln in loose if _above([ln], box, top)]
        blocks = [j for j, g in groups.items() if g and _above(g, box, top)]
        if not near and not blocks:
            break
        for j in blocks:
            near += groups.pop(j)
            used.add(j)
        taken += near
        top = min(ln.bbox[1] for ln in near)
        loose[:] = [ln for ln in loose if all(ln is not n for n in near)]
    return taken, used


def find_tables(blocks: list[Block], owners: dict[int, list[Line]], loose: list[Line]) -> set[int]:
    """Turn text blocks whose lines are tabular into tables and give every table block the
    header rows above it (lines taken from ``loose`` and from text blocks of header lines), in
    place. Returns the indices of the blocks taken into a table (now without lines)."""
    absorbed: set[int] = set()
    for i, b in enumerate(blocks):
        if b.category is Category.TEXT and tabular(owners[i]):
            b.category = Category.TABLE
            b.warnings.append(TABLE_WARNING)
        if b.category is Category.TABLE and owners[i]:
            # the box as its lines make it (slanted column heads stand above the layout box)
            box = union([b.bbox, *(ln.bbox for ln in owners[i])])
            texts = {
                j: owners[j]
                for j, o in enumerate(blocks)
                if j != i and j not in absorbed and o.category is Category.TEXT
            }
            heads, used = take_headers(box, loose, texts)
            for j in used:
                owners[j] = []
            absorbed |= used
            if heads:
                owners[i] = heads + owners[i]
                b.bbox = union([b.bbox, *(ln.bbox for ln in heads)])
    return absorbed
