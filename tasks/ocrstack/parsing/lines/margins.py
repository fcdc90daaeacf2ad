"""A running head or footer laid out as one spread row, found from the page's lines alone
(issue 22 class 1: a single page has no repetition to go by).

Books, reports and manuals set their running heads and footers as one row of short pieces
spread over the width of the text: page number, title and chapter (``400  BRITISH HUSBANDRY.
[Ch. XIX.``), or revision, part number and date (``Revision: 2.4  P/N 119-036  10 June 2019``).
The layout model takes such a row for the first or last line of the text block beside it. The
top (bottom) row of a page's lines is a running head (footer) when all of these hold:

* it lies in the top (bottom) :data:`BAND` of the page;
* it is at least two pieces (lines) with gaps of at least :data:`PIECE_GAP` line heights
  between them, the first starting at the left edge of the page's other lines and the last
  ending at their right edge (within a line height);
* no piece has more than :data:`PIECE_WORDS` words (body text, a column's line, has more);
* it stands apart from the text: the distance from its top to the top of the row next to it
  is at least :data:`APART` times the page's median row pitch (the last row of a page of
  three narrow columns is as short and as spread, but at the body's pitch).

The row's lines become one ``header`` (``footer``) block labelled :data:`LABEL`, which
assembly drops like the layout model's own paratext (kept with ``--keep-paratext``).
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

#: Share of the page height at the top and at the bottom where a spread row is paratext. Book
#: scans and title pages set their heads and footers further in than the 8 % of journal pages
#: (:data:`ocrstack.parsing.assembly.running.MARGIN`): the olmOCR sample's book page has its
#: head at 8-10 %, a manual's title page its footer row at 11 %.
BAND = 0.125
#: Least gap between two pieces of the row, in line heights (a justified word space is < 1).
PIECE_GAP = 2.0
#: Most words of one piece: a page number, a short title, a date.
PIECE_WORDS = 6
#: Least pitch from the row to the next, as a multiple of the page's median row pitch (the
#: sample's book head: 17 px over a 12.5 px body pitch, 1.36x; the manual's footer 2x).
APART = 1.25
#: ``Block.label`` of the blocks made here.
LABEL = "running"


def _spread(pieces: Sequence[Line], left: float, right: float) -> bool:
    lh = median(p.bbox[3] - p.bbox[1] for p in pieces)
    gaps = [b.bbox[0] - a.bbox[2] for a, b in zip(pieces, pieces[1:], strict=False)]
    return (
        len(pieces) >= 2
        and all(g >= PIECE_GAP * lh for g in gaps)
        and pieces[0].bbox[0] <= left + lh
        and pieces[-1].bbox[2] >= right - lh
        and all(len(p.text.split()) <= PIECE_WORDS for p in pieces)
    )


def margin_rows(lines: Sequence[Line], height: float) -> list[tuple[list[Line], Category]]:
    """The running-head row and the footer row of a page ``height`` pixels high, each as
    (its lines left to right, ``HEADER`` or ``FOOTER``), by the rules of the module docstring."""
    if len(lines) < 3:
        return []
    grouped = [[lines[i] for i in r] for r in rows([ln.bbox for ln in lines])]
    if len(grouped) < 3:
        return []
    tops = [min(ln.bbox[1] for ln in r) for r in grouped]
    pitch = median(b - a for a, b in zip(tops, tops[1:], strict=False))
    found = []
    for k, cat in ((0, Category.HEADER), (len(grouped) - 1, Category.FOOTER)):
        row = sorted(grouped[k], key=lambda ln: ln.bbox[0])
        rest = [ln for j, r in enumerate(grouped) if j != k for ln in r]
        left, right = min(ln.bbox[0] for ln in rest), max(ln.bbox[2] for ln in rest)
        inside = (
            max(ln.bbox[3] for ln in row) <= BAND * height
            if k == 0
            else min(ln.bbox[1] for ln in row) >= (1 - BAND) * height
        )
        apart = abs(tops[k] - tops[1 if k == 0 else k - 1]) >= APART * pitch
        if inside and apart and pitch > 0 and _spread(row, left, right):
            found.append((row, cat))
    return found


def split_margin_rows(lines: list[Line], height: float, first_order: int) -> tuple[list[Line], list[Block]]:
    """``lines`` without those of :func:`margin_rows`, and a paratext block per row found
    (``order`` from ``first_order`` on, text its pieces joined by two spaces)."""
    found = margin_rows(lines, height)
    taken = {id(ln) for row, _ in found for ln in row}
    blocks = [
        Block(
            bbox=union(ln.bbox for ln in row),
            category=cat,
            score=min(ln.score for ln in row),
            order=first_order + k,
            label=LABEL,
            text="  ".join(ln.text for ln in row),
            warnings=[f"a spread {cat.value} row of the page's lines: running head or footer"],
        )
        for k, (row, cat) in enumerate(found)
    ]
    return [ln for ln in lines if id(ln) not in taken], blocks
