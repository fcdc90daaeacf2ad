"""One recognised text line (:class:`Line`), the unit every whole-page line reader gives
(rapidocr, the PDF text layer) and :func:`ocrstack.parsing.lines.assign.assign_lines` places."""

from __future__ import annotations

from dataclasses import dataclass

from ocrstack.parsing.types import BBox


@dataclass
class Line:
    """One recognised text line: axis-aligned ``bbox`` in page pixels, ``text``, ``score`` 0..1.

    ``vertical`` / ``flipped``: the line's direction (:func:`ocrstack.parsing.lines.rotated.direction`).
    OCR: the detected box was taller than wide (text runs top-bottom) / the 180-degree reading
    scored higher than the upright one; text layer: its characters' direction.
    """

    bbox: BBox
    text: str
    score: float
    vertical: bool = False
    flipped: bool = False
    #: slope of the detected box's top edge, degrees, image coordinates (y down): positive =
    #: the line descends to the right
    angle: float = 0.0
    #: the line ends with a table-of-contents page number joined to it
    #: (:func:`ocrstack.parsing.lines.assign.merge_toc_numbers`)
    toc: bool = False
