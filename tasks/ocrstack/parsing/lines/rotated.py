"""Text boxes written at 90, 180 or 270 degrees inside one block, read in their own frame
(issue 11 item 4).

A block read row by row (a figure, a table) or column by column orders its lines by their
axis-aligned page boxes. Lines of a rotated text box do not follow that order: on
odd_rotated_text_boxes (one figure block, four boxes written at 0, 90, 180 and 270 degrees;
text layer) the two vertical boxes side by side were read as one row, "(L) ... starboard
written vertically to port (R) ...", and the upside-down box bottom line first ("(B)" last),
reading order 0.68 against the text layer. Here the lines of one direction that touch
(:data:`GROUP_GAP`) form a run; a run is ordered row by row in its own frame (the page turned
so that its text is upright) and becomes one line of several rows, which the block's order then
places like any other line and never joins to a neighbour's row.

The direction of a line comes from :attr:`Line.vertical` and :attr:`Line.flipped` (degrees
clockwise, the way the text is turned on the page): rapidocr turns a vertical crop 90 degrees
counter-clockwise before reading it (``get_rotate_crop_image``), so a vertical line read
without a flip runs top to bottom (90) and a flipped one bottom to top (270); a flipped
horizontal line is upside down (180). The text layer sets the same two fields from PDFium's
character angle (:func:`ocrstack.parsing.textlayer.lines.build_lines`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from ocrstack.parsing.geometry import union
from ocrstack.parsing.reading_order import rows
from ocrstack.parsing.types import BBox

#: Lines of one direction belong to one run when their boxes, both grown by this many times the
#: larger of their thicknesses (a box's extent across the writing direction), touch: the lines of the
#: odd_rotated_text_boxes boxes are 2-26 px apart at 37 px thick; the boxes themselves 200+ px.
GROUP_GAP = 1.0
#: Most characters of a line that is a glyph or two rather than turned text (:func:`turned`).
GLYPH_CHARS = 2
#: The same for a vertical line: a stacked fraction OCR reads as "12-35" is up to 5 (:func:`turned`).
VERTICAL_GLYPH_CHARS = 5


def direction(ln: Any) -> int:  # a Line (lines.assign imports this module)
    """Degrees clockwise the text of ``ln`` is turned on the page: 0, 90, 180 or 270."""
    if ln.vertical:
        return 270 if ln.flipped else 90
    return 180 if ln.flipped else 0


def turned(ln: Any) -> bool:  # a Line
    """``ln`` is turned text: its :func:`direction` is not 0 and it has more than
    :data:`GLYPH_CHARS` characters, more than :data:`VERTICAL_GLYPH_CHARS` when vertical.

    A few glyphs alone have no direction to follow: their box is taller than wide, or their
    reading scores better turned, whatever the text's direction. A "今" read alone and flipped
    on odd_multipage_tiff_fax_g3 stays on its row ("Script: 今"); the stacked fractions of
    math_zh_gaokao_exam (boxes taller than wide, read "2-5", "1-2") stay in their answer rows.
    Inside a run of turned lines they are read with it ("up" in "written up from bottom",
    :func:`runs`)."""
    if direction(ln) == 0:
        return False
    return len(ln.text) > (VERTICAL_GLYPH_CHARS if ln.vertical else GLYPH_CHARS)


def frame_box(b: BBox, deg: int) -> BBox:
    """``b`` (page px) in the frame of text turned ``deg`` degrees clockwise: the box of its
    corners turned ``deg`` counter-clockwise, so that the text reads left to right, rows top to
    bottom (y down). Only differences of the result mean anything."""
    c, s = round(math.cos(math.radians(deg))), round(math.sin(math.radians(deg)))
    us = [x * c + y * s for x in (b[0], b[2]) for y in (b[1], b[3])]
    vs = [-x * s + y * c for x in (b[0], b[2]) for y in (b[1], b[3])]
    return (min(us), min(vs), max(us), max(vs))


def _thickness(b: BBox, deg: int) -> float:
    return (b[2] - b[0]) if deg in (90, 270) else (b[3] - b[1])


def _touch(a: BBox, b: BBox, pad: float) -> bool:
    return a[0] - pad <= b[2] and b[0] - pad <= a[2] and a[1] - pad <= b[3] and b[1] - pad <= a[3]


def runs(lines: Sequence[Any], deg: int) -> list[list[int]]:
    """Indices of the ``lines`` written at ``deg`` (not 0), grouped into runs of touching lines
    (:data:`GROUP_GAP`), each run in first-line order; a run holds at least one :func:`turned`
    line (lines of a glyph or two alone are no run)."""
    idx = [i for i, ln in enumerate(lines) if direction(ln) == deg]
    parent = {i: i for i in idx}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for n, i in enumerate(idx):
        for j in idx[n + 1 :]:
            a, b = lines[i].bbox, lines[j].bbox
            if _touch(a, b, GROUP_GAP * max(_thickness(a, deg), _thickness(b, deg))):
                parent[find(j)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in idx:
        groups.setdefault(find(i), []).append(i)
    return [g for g in groups.values() if any(turned(lines[i]) for i in g)]


def collapse(lines: Sequence[Any]) -> list[Any]:
    """``lines`` with every run of rotated lines (:func:`runs`) replaced by one line: its rows
    ordered in the run's frame (:func:`frame_box`, then :func:`~ocrstack.parsing.reading_order.rows`),
    words of a row joined by a space, rows by a newline; its box the union of the run's.

    Upright lines, and a run of one line, are returned as they are, in their places; a merged
    run takes the place of its first line. Nothing changes on a page without rotated text.
    """
    out: list[Any] = list(lines)
    drop: set[int] = set()
    for deg in (90, 180, 270):
        for run in runs(lines, deg):
            if len(run) < 2:
                continue
            boxes = [frame_box(lines[i].bbox, deg) for i in run]
            text = "\n".join(" ".join(lines[run[j]].text for j in r) for r in rows(boxes))
            first = min(run)
            out[first] = dataclasses.replace(
                lines[first], text=text, bbox=union([lines[i].bbox for i in run])
            )
            drop.update(i for i in run if i != first)
    return [ln for i, ln in enumerate(out) if i not in drop]
