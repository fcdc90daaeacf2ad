"""Ruling lines of a PDF page from PDFium's path objects (issue 11 item 3, and its speed target).

pdfplumber's ``lines`` table strategy gets its edges from pdfminer, which interprets the whole
content stream in Python: 0.3 s a page on the corpus table pages, 1.1 s for the
en_multicol_pari_refcard page, more than everything else the text-layer path does for a page.
PDFium has already parsed the page (ocrstack renders it and reads its text layer with it), so
the same edges are taken from its path objects here in about a millisecond, and pdfplumber's
table finder gets them as explicit edges (:func:`ocrstack.parsing.tables.born_digital._plumber`).

Edges follow pdfplumber's ``page.edges`` (pdfplumber/utils/geometry.py ``rect_to_edges``,
``curve_to_edges``, ``line_to_edge``): every straight segment of a painted (filled or stroked)
path, a rectangle's four sides, a closed sub-path's closing side; only horizontal and vertical
ones are kept (pdfplumber drops the others by orientation). Bezier segments are skipped
(pdfplumber would join their control points). Paths inside form XObjects are walked with the
form's matrix. Coordinates are page pixels of the render at ``px_per_pt`` (the pixels of
:func:`ocrstack.parsing.documents.iter_pages`).
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ocrstack.parsing.documents import PDFIUM_LOCK
from ocrstack.parsing.documents.pdfspace import PageToPixels, page_to_pixels

#: A segment whose ends differ by less than this (points) across its direction is axis-aligned.
#: pdfplumber compares exactly; PDFium's matrices carry float noise.
AXIS_TOLERANCE_PT = 0.01
#: Form XObjects nested deeper than this are not walked (a guard against pathological files).
MAX_FORM_DEPTH = 8

Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


@dataclass(frozen=True)
class Segment:
    """A horizontal (``orientation`` ``h``) or vertical (``v``) ruling segment in page pixels,
    ``x0 <= x1`` and ``y0 <= y1`` (one pair equal up to :data:`AXIS_TOLERANCE_PT`)."""

    x0: float
    y0: float
    x1: float
    y1: float
    orientation: str


def _compose(inner: Matrix, outer: Matrix) -> Matrix:
    """The matrix applying ``inner`` first, then ``outer`` (PDF row-vector convention)."""
    a, b, c, d, e, f = inner
    A, B, C, D, E, F = outer  # the PDF spec's names
    return (a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D, e * A + f * C + E, e * B + f * D + F)


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]


def _matrix(raw, obj) -> Matrix:  # pdfium handles
    fm = raw.FS_MATRIX()
    if not raw.FPDFPageObj_GetMatrix(obj, fm):
        return _IDENTITY
    return (fm.a, fm.b, fm.c, fm.d, fm.e, fm.f)


def _painted(raw, obj) -> bool:
    fill, stroke = ctypes.c_int(), ctypes.c_int()
    if not raw.FPDFPath_GetDrawMode(obj, fill, stroke):
        return True
    return fill.value != raw.FPDF_FILLMODE_NONE or bool(stroke.value)


def _path_points(raw, obj, m: Matrix) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """Straight segments (user space, after ``m``) of one path object, closing sides included."""
    out = []
    x, y = ctypes.c_float(), ctypes.c_float()
    start = cur = None
    for i in range(raw.FPDFPath_CountSegments(obj)):
        seg = raw.FPDFPath_GetPathSegment(obj, i)
        if not seg or not raw.FPDFPathSegment_GetPoint(seg, x, y):
            continue
        p = _apply(m, x.value, y.value)
        kind = raw.FPDFPathSegment_GetType(seg)
        if kind == raw.FPDF_SEGMENT_MOVETO:
            start = cur = p
            continue
        if kind == raw.FPDF_SEGMENT_LINETO and cur is not None:
            out.append((cur, p))
        cur = p
        if raw.FPDFPathSegment_GetClose(seg) and start is not None:
            if p != start:
                out.append((p, start))
            cur = start
    return out


def _walk(raw, objs, m: Matrix, depth: int, to_px: PageToPixels, tol: float, out: list[Segment]) -> None:
    for obj in objs:
        kind = raw.FPDFPageObj_GetType(obj)
        if kind == raw.FPDF_PAGEOBJ_FORM and depth < MAX_FORM_DEPTH:
            inner = _compose(_matrix(raw, obj), m)
            kids = [raw.FPDFFormObj_GetObject(obj, k) for k in range(raw.FPDFFormObj_CountObjects(obj))]
            _walk(raw, kids, inner, depth + 1, to_px, tol, out)
        elif kind == raw.FPDF_PAGEOBJ_PATH and _painted(raw, obj):
            for (ax, ay), (bx, by) in _path_points(raw, obj, _compose(_matrix(raw, obj), m)):
                if abs(ax - bx) > tol and abs(ay - by) > tol:
                    continue  # diagonal: pdfplumber gives it no orientation
                (px0, py0), (px1, py1) = to_px.point(ax, ay), to_px.point(bx, by)
                x0, x1, y0, y1 = min(px0, px1), max(px0, px1), min(py0, py1), max(py0, py1)
                if x1 - x0 >= y1 - y0:
                    out.append(Segment(x0, (y0 + y1) / 2, x1, (y0 + y1) / 2, "h"))
                else:
                    out.append(Segment((x0 + x1) / 2, y0, (x0 + x1) / 2, y1, "v"))


class PageRules(NamedTuple):
    """The ruling segments of one page (page pixels) and its MediaBox size (points, not turned
    by /Rotate: pdfplumber's ``page.width`` and ``page.height`` for an unrotated page)."""

    segments: tuple[Segment, ...]
    width_pt: float
    height_pt: float


def ruling_segments(
    path: Path | str, index: int, px_per_pt: float, password: str | None = None
) -> tuple[Segment, ...]:
    """Horizontal and vertical segments of the painted paths of page ``index`` (0-based), in
    page pixels at ``px_per_pt`` (render DPI / 72): :func:`page_rules`' segments.

    Raises:
        pypdfium2.PdfiumError: the file or page cannot be loaded.
        OSError: the file cannot be read.
    """
    return page_rules(path, index, px_per_pt, password).segments


def page_rules(path: Path | str, index: int, px_per_pt: float, password: str | None = None) -> PageRules:
    """:class:`PageRules` of page ``index`` (0-based) at ``px_per_pt``. Cached per file version
    (path, size, modification time) and page, so the table blocks of one page share one walk.

    Raises:
        pypdfium2.PdfiumError: the file or page cannot be loaded.
        OSError: the file cannot be read.
    """
    st = os.stat(path)
    return _cached(str(path), st.st_size, st.st_mtime_ns, index, round(px_per_pt, 6), password)


@functools.lru_cache(maxsize=16)
def _cached(
    path: str, _size: int, _mtime: int, index: int, px_per_pt: float, password: str | None
) -> PageRules:
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    out: list[Segment] = []
    with PDFIUM_LOCK:
        doc = pdfium.PdfDocument(path, password=password)
        try:
            page = doc[index]
            try:
                w, h = page.get_size()
                left, bottom, right, top = page.get_mediabox()
                to_px = page_to_pixels(raw, page.raw, (round(w * px_per_pt), round(h * px_per_pt)))
                n = raw.FPDFPage_CountObjects(page.raw)
                objs = (raw.FPDFPage_GetObject(page.raw, k) for k in range(n))
                _walk(raw, objs, _IDENTITY, 0, to_px, AXIS_TOLERANCE_PT, out)
            finally:
                page.close()
        finally:
            doc.close()
    return PageRules(tuple(out), abs(right - left), abs(top - bottom))
