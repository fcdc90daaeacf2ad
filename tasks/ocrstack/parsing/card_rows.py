"""Block order on a page of cards: a grid read row by row, not column by column (issue 22
class 7: "a 2x2 grid of cards read column-first").

The column-aware XY-cut (:mod:`ocrstack.parsing.reading_order`) reads a page with a gutter
running down it column by column: right for articles, wrong for a grid of cards (a slide or a
poster of boxes: equation 1 | equation 2 above equation 3 | equation 4, read 1, 3, 2, 4). The
blocks of such a page fall into horizontal bands, each crossing the gutter, and in every band
the cards of the columns start at the same height. So a region split by a gutter is read band
by band (:func:`card_rows`) when

* full-width gaps cut it into at least two bands, each with blocks on both sides of the gutter;
* in every band at least two columns start within :data:`TOP_ALIGN` gutter widths of the same
  height (the cards' top edges);
* every gap between bands is at least :data:`BAND_GAP` gutter widths high: cards are spaced
  about as far apart down as across. In an article the two columns may both pause at one
  height, but at a paragraph's or a heading's distance, less than its gutter, and rarely with
  both columns starting again level.
"""

from __future__ import annotations

from collections.abc import Sequence

from ocrstack.parsing.types import BBox

#: Largest difference (gutter widths) between the tops of two columns' first blocks in a band.
TOP_ALIGN = 0.25
#: Least gap (gutter widths) between two bands of cards. The olmOCR sample's mathfuncs page:
#: gutter 106 px, gap between its rows of cards 110 px.
BAND_GAP = 0.75


def card_rows(
    boxes: Sequence[BBox], columns: list[list[int]], strips: list[list[int]]
) -> list[list[int]] | None:
    """The bands of the region (indices into ``boxes``, top to bottom) when the region, split
    into ``columns`` (left to right) by its gutter and into ``strips`` (top to bottom) by its
    full-width gaps, is a grid of cards (module docstring), else None. A band is a run of
    strips less than :data:`BAND_GAP` gutter widths apart."""
    if len(strips) < 2 or len(columns) < 2:
        return None
    edges = [(min(boxes[i][0] for i in g), max(boxes[i][2] for i in g)) for g in columns]
    gutter = min(b[0] - a[1] for a, b in zip(edges, edges[1:], strict=False))
    if gutter <= 0:
        return None
    bands = [list(strips[0])]
    for strip in strips[1:]:
        gap = min(boxes[i][1] for i in strip) - max(boxes[i][3] for i in bands[-1])
        if gap < BAND_GAP * gutter:
            bands[-1].extend(strip)
        else:
            bands.append(list(strip))
    if len(bands) < 2:
        return None
    col_of = {i: k for k, g in enumerate(columns) for i in g}
    for band in bands:
        tops: dict[int, float] = {}
        for i in band:
            tops[col_of[i]] = min(tops.get(col_of[i], float("inf")), boxes[i][1])
        first = min(tops.values())
        if sum(1 for t in tops.values() if t - first <= TOP_ALIGN * gutter) < 2:
            return None
    return bands
