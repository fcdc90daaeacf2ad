"""PDF pages rendered with pypdfium2 (PDFium), under one process-wide lock.

See :mod:`ocrstack.parsing.documents` for the rules (DPI, /Rotate, forms, passwords, pixel
budget) and why every PDFium call holds :data:`PDFIUM_LOCK`.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from ocrstack.core.errors import InputError
from ocrstack.parsing.documents.buffers import BUFFERS
from ocrstack.parsing.documents.ranges import parse_page_range
from ocrstack.parsing.types import PageImage, Thumbnail

#: A layout provider's thumbnailer (:meth:`ocrstack.parsing.engines.LayoutProvider.thumbnailer`).
Thumbnailer = Callable[[Any], Any]
#: The text layer's object reader (:func:`ocrstack.parsing.textlayer.extract.page_objects`).
ObjectsReader = Callable[[Any, Any, tuple[int, int]], Any]

PDF_REOPEN_EVERY = 10
"""Pages rendered per opening of a PDF; see :func:`_iter_pdf` for the measurement behind it."""

PDFIUM_LOCK = threading.RLock()
"""Serialises every PDFium call of this process (pypdfium2 issue 309: PDFium is not thread-safe)."""

_PDFIUM_ERRORS = {
    pdfium_c.FPDF_ERR_SUCCESS: "broken document structure or no pages",  # load failed, no code
    pdfium_c.FPDF_ERR_UNKNOWN: "unknown PDFium error",
    pdfium_c.FPDF_ERR_FILE: "file not found or unreadable",
    pdfium_c.FPDF_ERR_FORMAT: "not a PDF or corrupted",
    pdfium_c.FPDF_ERR_SECURITY: "unsupported security handler",
    pdfium_c.FPDF_ERR_PAGE: "page not found or content error",
}


class _DropXfaAdvice(logging.Filter):
    """Drop pypdfium2's "rebuild PDFium with XFA" advice; the page note says it instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "compiled without XFA support" not in record.getMessage()


logging.getLogger("pypdfium2._helpers.document").addFilter(_DropXfaAdvice())


@contextmanager
def _open_pdf(path: Path, password: str | None) -> Iterator[pdfium.PdfDocument]:
    """Open a PDF under the lock with forms initialised; close it (under the lock) on exit."""
    with PDFIUM_LOCK:
        try:
            doc = pdfium.PdfDocument(str(path), password=password)
        except pdfium.PdfiumError as exc:
            raise _pdf_open_error(path, password, exc) from exc
        try:
            # Must precede any page access (pypdfium2 PdfDocument.init_forms docstring).
            doc.init_forms()
        except pdfium.PdfiumError:
            pass  # form env failed: pages still render, fields may be missing
    try:
        yield doc
    finally:
        with PDFIUM_LOCK:
            doc.close()


def _pdf_open_error(path: Path, password: str | None, exc: pdfium.PdfiumError) -> InputError:
    code = getattr(exc, "err_code", None)
    if code == pdfium_c.FPDF_ERR_PASSWORD:
        if password is None:
            return InputError(
                f"{path}: password required (the PDF is encrypted with a user password)",
                "pass it with --password PASSWORD",
            )
        return InputError(
            f"{path}: wrong password for this encrypted PDF", "check the value given to --password"
        )
    reason = _PDFIUM_ERRORS.get(code, str(exc))
    return InputError(
        f"{path}: cannot open PDF ({reason})", "check the file is a complete PDF; re-export or re-download it"
    )


def _pdf_scale(width_pt: float, height_pt: float, dpi: float, max_pixels: int) -> tuple[float, bool]:
    """Render scale (pixels per point) for ``dpi``, reduced so the bitmap fits ``max_pixels``.

    Returns ``(scale, downscaled)``. The reduced scale is chosen from the page size in points
    so the oversized bitmap is never allocated; rounding of each side is accounted for.
    """
    scale = dpi / 72.0
    if _px(width_pt, scale) * _px(height_pt, scale) <= max_pixels:
        return scale, False
    scale *= math.sqrt(max_pixels / (width_pt * scale * height_pt * scale))
    while _px(width_pt, scale) * _px(height_pt, scale) > max_pixels and scale > 1e-6:
        scale *= 0.999
    return scale, True


def _px(points: float, scale: float) -> int:
    """Pixels pypdfium2 allocates for a side of ``points`` at ``scale``: ``ceil`` (PdfPage.render)."""
    return max(1, math.ceil(points * scale))


def count(path: Path, password: str | None) -> int:
    with _open_pdf(path, password) as doc, PDFIUM_LOCK:
        return len(doc)


def iter_pdf(
    path: Path,
    spec: str | None,
    dpi: int,
    password: str | None,
    max_pixels: int,
    limit: int | None,
    sha: str,
    thumbnailer: Thumbnailer | None = None,
    objects_reader: ObjectsReader | None = None,
) -> Iterator[PageImage]:
    """Render the selected pages, reopening the document every :data:`PDF_REOPEN_EVERY` pages;
    ``thumbnailer`` and ``objects_reader`` (see :func:`ocrstack.parsing.documents.iter_pages`)
    make each page's thumbnail and objects.

    PDFium keeps per-document caches (parsed fonts, images, page resources) until the document
    is closed. Measured here (300-page PDF made by importing the two pages of the corpus'
    en_twocol_ltnews24.pdf 150 times each, 200 DPI): with the document kept open, resident memory
    grew about 1.6 MB per page (584 MiB after 300 pages); reopening every 25 / 16 / 10 pages
    gave a peak of 146 / 135 / 123 MiB against 122 MiB for a 10-page file, at the same
    0.026-0.03 s per page. Reopening bounds memory for long inputs (issue 3 benchmark: peak RSS
    of 300 pages within 1.2 x that of 10 pages).
    """
    stamp = _stamp(path)
    with _open_pdf(path, password) as doc:
        with PDFIUM_LOCK:
            n_pages = len(doc)
            formtype = doc.get_formtype()
        if n_pages == 0:
            raise InputError(f"{path}: PDF has no pages", "check the file; re-export it")
        selected = parse_page_range(spec, n_pages, source=path)
        if limit is not None:
            selected = selected[:limit]
        notes: tuple[str, ...] = ()
        if formtype in (pdfium_c.FORMTYPE_XFA_FULL, pdfium_c.FORMTYPE_XFA_FOREGROUND):
            notes = ("XFA form: rendered its AcroForm/page content (PDFium here has no XFA engine)",)
        for index in selected[:PDF_REOPEN_EVERY]:
            yield _render_pdf_page(doc, path, index, dpi, max_pixels, sha, notes, thumbnailer, objects_reader)
    for start in range(PDF_REOPEN_EVERY, len(selected), PDF_REOPEN_EVERY):
        if _stamp(path) != stamp:
            raise InputError(
                f"{path}: file changed while it was being read", "rerun once it is no longer written to"
            )
        with _open_pdf(path, password) as doc:
            for index in selected[start : start + PDF_REOPEN_EVERY]:
                yield _render_pdf_page(
                    doc, path, index, dpi, max_pixels, sha, notes, thumbnailer, objects_reader
                )


def _rgb_image(bitmap: pdfium.PdfBitmap) -> Image.Image:
    """A Pillow ``RGB`` image of an ``RGBX`` bitmap (R, G, B and an unused byte a pixel, the way
    Pillow stores RGB) that uses the bitmap's own buffer (a Python object, kept alive by the
    image; read-only: Pillow copies it before any change in place), else a copy
    (``convert``) for another pixel format or a Pillow without ``core.map_buffer`` (what
    ``Image.frombuffer`` maps with; it maps an RGBX buffer as mode ``RGBX`` only).

    The copy, one more page-sized buffer, was half of a page's render time at 200 DPI
    (34 -> 17 ms on zh_ctex_manual page 1) and 15 MB more peak memory; the pixels are the same
    (tests/parsing/test_documents.py)."""
    if bitmap.mode == "RGBX" and not bitmap._is_foreign:
        try:
            core = Image.core.map_buffer(
                bitmap.buffer, (bitmap.width, bitmap.height), "raw", 0, ("RGB", bitmap.stride, 1)
            )
        except (AttributeError, TypeError, ValueError):
            core = None
        if core is not None:
            image = Image.new("RGB", (0, 0))._new(core)
            image.readonly = 1
            return image
    return bitmap.to_pil().convert("RGB")


def _stamp(path: Path) -> tuple[int, int]:
    """(size in bytes, mtime in ns): detects a file replaced between two opens."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _render_pdf_page(
    doc: pdfium.PdfDocument,
    path: Path,
    index: int,
    dpi: int,
    max_pixels: int,
    sha: str,
    doc_notes: tuple[str, ...],
    thumbnailer: Thumbnailer | None = None,
    objects_reader: ObjectsReader | None = None,
) -> PageImage:
    notes = list(doc_notes)
    thumb = objects = None
    fix = "check the file; re-export the PDF, or skip the page with --pages"
    with PDFIUM_LOCK:
        try:
            page = doc[index]
        except pdfium.PdfiumError as exc:
            raise InputError(f"{path}: page {index + 1} cannot be loaded ({exc})", fix) from exc
        try:
            width_pt, height_pt = page.get_size()  # /Rotate already applied (FPDF_GetPageWidthF)
            rotation = page.get_rotation()
            if not (width_pt > 0 and height_pt > 0 and math.isfinite(width_pt * height_pt)):
                raise InputError(
                    f"{path}: page {index + 1} has no usable size ({width_pt} x {height_pt} pt)", fix
                )
            scale, downscaled = _pdf_scale(width_pt, height_pt, dpi, max_pixels)
            # RGBx in a buffer of ours (new_native): the layout of a Pillow RGB image (4 bytes a
            # pixel), which takes the buffer over (_rgb_image), no copy
            bitmap = page.render(
                scale=scale,
                may_draw_forms=True,
                fill_color=(255, 255, 255, 255),
                rev_byteorder=True,  # RGB byte order: no copy-swap
                prefer_bgrx=True,
                bitmap_maker=BUFFERS.bitmap,  # a buffer used before: no page faults (.buffers)
            )
            try:
                if thumbnailer is not None and bitmap.mode == "RGBX":
                    thumb = thumbnailer(bitmap.to_numpy())
                image = _rgb_image(bitmap)
            finally:
                bitmap.close()
            if objects_reader is not None:
                objects = objects_reader(pdfium_c, page, image.size)
        except pdfium.PdfiumError as exc:
            raise InputError(f"{path}: page {index + 1} cannot be rendered ({exc})", fix) from exc
        finally:
            page.close()
    effective_dpi = scale * 72.0
    if rotation:
        notes.append(f"page /Rotate {rotation} applied")
    if downscaled:
        notes.append(
            f"downscaled from {dpi} to {effective_dpi:.1f} DPI: page {width_pt:.0f}x{height_pt:.0f} pt "
            f"at {dpi} DPI would be {_px(width_pt, dpi / 72) * _px(height_pt, dpi / 72)} pixels, "
            f"budget {max_pixels}"
        )
    return PageImage(
        source=str(path),
        index=index,
        image=image,
        dpi=effective_dpi,
        source_sha256=sha,
        notes=tuple(notes),
        thumbnail=Thumbnail(id(image), thumb) if thumb is not None else None,
        objects=objects,
    )
