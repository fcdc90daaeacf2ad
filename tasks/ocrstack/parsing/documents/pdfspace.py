"""PDF user space -> page pixels, the map PDFium's renderer uses (``FPDF_PageToDevice``).

Shared by the text layer (:mod:`ocrstack.parsing.textlayer.extract`: character boxes) and the
born-digital tables (:mod:`ocrstack.parsing.tables.rules`: ruling lines), so both land on the
pixels :func:`ocrstack.parsing.documents.iter_pages` renders (/Rotate and the crop box applied).
Callers hold :data:`ocrstack.parsing.documents.PDFIUM_LOCK`.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from ocrstack.parsing.types import BBox

#: Sub-pixel precision of the transform: FPDF_PageToDevice returns whole device pixels, so the
#: transform is measured on a device this many times larger.
PRECISION = 64


@dataclass(frozen=True)
class PageToPixels:
    """The affine map ``(x, y)`` user space (points) -> page pixels:
    ``px = ox + a*x + c*y``, ``py = oy + b*x + d*y``."""

    ox: float
    oy: float
    a: float
    b: float
    c: float
    d: float

    def point(self, x: float, y: float) -> tuple[float, float]:
        """Pixel position (x right, y down, origin top-left) of user-space point ``(x, y)``."""
        return self.ox + self.a * x + self.c * y, self.oy + self.b * x + self.d * y

    def box(self, left: float, bottom: float, right: float, top: float) -> BBox:
        """Pixel bbox (x0, y0, x1, y1) of a user-space rectangle (PDFium's left/bottom/right/top)."""
        if self.b == 0.0 and self.c == 0.0:  # /Rotate 0 or 180: x from x, y from y (every char)
            x0, x1 = self.ox + self.a * left, self.ox + self.a * right
            y0, y1 = self.oy + self.d * bottom, self.oy + self.d * top
            return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
        pts = [self.point(x, y) for x, y in ((left, bottom), (right, top), (left, top), (right, bottom))]
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        return (min(xs), min(ys), max(xs), max(ys))


def page_to_pixels(raw, page, size: tuple[int, int]) -> PageToPixels:  # pdfium handles
    """Measure the map for ``page`` (an ``FPDF_PAGE``) rendered to ``size`` (width, height) pixels.

    ``raw`` is ``pypdfium2.raw``. Three points are sent through ``FPDF_PageToDevice`` on a
    device :data:`PRECISION` times larger than ``size``.
    """
    w, h = size
    dx, dy = ctypes.c_int(), ctypes.c_int()

    def dev(x: float, y: float) -> tuple[float, float]:
        raw.FPDF_PageToDevice(page, 0, 0, w * PRECISION, h * PRECISION, 0, x, y, dx, dy)
        return dx.value / PRECISION, dy.value / PRECISION

    ox, oy = dev(0.0, 0.0)
    ax, ay = dev(1000.0, 0.0)
    bx, by = dev(0.0, 1000.0)
    return PageToPixels(ox, oy, (ax - ox) / 1000, (ay - oy) / 1000, (bx - ox) / 1000, (by - oy) / 1000)
