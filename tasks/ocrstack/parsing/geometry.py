"""Axis-aligned box helpers shared by layout merging, line assignment and reading order.

Boxes are ``(x0, y0, x1, y1)`` in page pixels, origin top-left (see :mod:`ocrstack.parsing.types`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ocrstack.parsing.types import BBox

# These run for every line against every block of a page: min and max of two values are written
# out (``y if y < x else x`` is ``min(x, y)``, ``y if y > x else x`` is ``max(x, y)``, the same
# value), at a third of the time of the builtin calls.


def area(b: BBox) -> float:
    """Area in square pixels (0 for an empty or inverted box)."""
    w, h = b[2] - b[0], b[3] - b[1]
    return (w if w > 0.0 else 0.0) * (h if h > 0.0 else 0.0)


def intersection(a: BBox, b: BBox) -> float:
    """Area of the overlap of ``a`` and ``b`` in square pixels."""
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    w = (b2 if b2 < a2 else a2) - (b0 if b0 > a0 else a0)
    h = (b3 if b3 < a3 else a3) - (b1 if b1 > a1 else a1)
    return w * h if w > 0 and h > 0 else 0.0


def iou(a: BBox, b: BBox) -> float:
    """Intersection over union, 0..1."""
    inter = intersection(a, b)
    union = area(a) + area(b) - inter
    return inter / union if union > 0 else 0.0


def covered(a: BBox, by: BBox) -> float:
    """Fraction of ``a``'s area that lies inside ``by`` (0..1)."""
    aa = area(a)
    return intersection(a, by) / aa if aa > 0 else 0.0


def union(boxes: Iterable[BBox]) -> BBox:
    """Smallest box containing every box in ``boxes`` (at least one)."""
    bs = list(boxes)
    return (min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs))


def pad(b: BBox, px: float, size: tuple[int, int]) -> BBox:
    """Grow ``b`` by ``px`` on every side, clipped to the page ``size`` = (width, height)."""
    w, h = size
    return (max(0.0, b[0] - px), max(0.0, b[1] - px), min(float(w), b[2] + px), min(float(h), b[3] + px))


def clip(b: BBox, size: tuple[int, int]) -> BBox:
    """Clip ``b`` to the page ``size`` = (width, height)."""
    return pad(b, 0.0, size)
