"""Document loading: input files and directories -> a lazy stream of RGB page images.

Stage 1 of ``ocrstack parse`` (issue 3, "Pipeline" item 1). Two kinds of input:

* **PDF**, rendered with pypdfium2 (PDFium). Resolution is given in DPI, i.e. pixels per
  inch where one inch is 72 PDF points, so a page of ``w`` x ``h`` points renders to
  ``ceil(w * dpi / 72)`` x ``ceil(h * dpi / 72)`` pixels (pypdfium2 ``PdfPage.render``).
  The page's ``/Rotate`` is applied by PDFium (the image is what a viewer shows). AcroForm
  fields are drawn (``init_forms`` before any page is loaded, ``may_draw_forms=True``;
  without a form environment PDFium skips widget annotations). Owner-password-only PDFs
  open without a password; a PDF that needs a user password raises
  :class:`~ocrstack.core.errors.InputError` naming ``--password``.
* **Raster images** (PNG, JPEG, TIFF, WebP, BMP) via Pillow; every frame of a multi-page TIFF
  is a page. CMYK, palette, alpha, grey+alpha and 16-bit images become RGB, transparent
  areas composited on white; EXIF orientation is applied; non-square pixels (fax TIFFs,
  204 x 196 DPI) are resampled to square pixels.

PDFium is not thread-safe (pypdfium2 issue 309: "Data format error" under a threaded Celery
pool; https://pypdfium2.readthedocs.io/en/stable/python_api.html#thread-incompatibility): every
PDFium call in this module runs under the module-level :data:`PDFIUM_LOCK`, so threads may call
:func:`iter_pages` concurrently; they render one at a time (use processes for parallel
rendering).

Pixel budget: a page whose full render would exceed ``max_pixels`` is scaled down *before*
anything is allocated -- PDFs from the page size in points, JPEGs with Pillow's DCT
``draft`` scaling, other images only if the decoded frame stays within
``DECODE_LIMIT_FACTOR * max_pixels`` (larger ones are refused as decompression bombs). Every
downscale is recorded in :attr:`PageImage.notes`.

Modules: :mod:`.inputs` (file list, type sniffing, sha256), :mod:`.ranges` (``--pages``),
:mod:`.pdf` (PDFium rendering), :mod:`.raster` (Pillow images).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ocrstack.parsing.documents import pdf, raster
from ocrstack.parsing.documents.inputs import (
    IMAGE_SUFFIXES,
    PDF_SUFFIXES,
    SUPPORTED_SUFFIXES,
    expand_inputs,
    file_sha256,
    kind,
    sniff,
)
from ocrstack.parsing.documents.pdf import PDFIUM_LOCK
from ocrstack.parsing.documents.ranges import parse_page_range
from ocrstack.parsing.documents.raster import DECODE_LIMIT_FACTOR, MAX_DPI_RATIO
from ocrstack.parsing.types import PageImage

__all__ = [
    "DECODE_LIMIT_FACTOR",
    "IMAGE_SUFFIXES",
    "MAX_DPI_RATIO",
    "PDF_SUFFIXES",
    "PDFIUM_LOCK",
    "SUPPORTED_SUFFIXES",
    "count_pages",
    "expand_inputs",
    "file_sha256",
    "image_dpi",
    "iter_pages",
    "parse_page_range",
    "sniff",
]


def count_pages(path: Path, password: str | None = None) -> int:
    """Number of pages of a PDF, frames of a (multi-page) TIFF, or 1 for other images.

    Raises:
        InputError: missing, empty, corrupt, unsupported or password-protected file.
    """
    path = Path(path).absolute()
    if kind(path) == "pdf":
        return pdf.count(path, password)
    return raster.count(path)


def iter_pages(
    path: Path,
    *,
    pages: str | None = None,
    dpi: int = 200,
    password: str | None = None,
    max_pixels: int = 40_000_000,
    limit: int | None = None,
    thumbnailer: Callable[[Any], Any] | None = None,
    objects_reader: Callable[[Any, Any, tuple[int, int]], Any] | None = None,
) -> Iterator[PageImage]:
    """Yield the selected pages of one input as RGB :class:`~ocrstack.parsing.types.PageImage`, lazily.

    One page is rendered per ``next()``; the document stays open between pages and is closed
    when the generator is exhausted or closed, so a 300-page PDF never sits in memory at once.

    Args:
        path: a PDF or raster image (type detected from its first bytes: ``%PDF-`` -> PDF).
        pages: 1-based selection like ``"1-3,7"`` (see :func:`parse_page_range`); None = all.
            For images it selects TIFF frames.
        dpi: PDF render resolution in pixels per inch (72 points = 1 inch). Ignored for raster
            images, which keep their pixel size; their ``PageImage.dpi`` is None.
        password: PDF user password (owner-password-only PDFs need none).
        max_pixels: pixel budget (width x height) per page; larger pages are downscaled before
            allocation and the page's ``notes`` say so. For PDFs ``PageImage.dpi`` is then the
            effective (reduced) DPI.
        limit: yield at most this many pages (after ``pages`` selection).
        thumbnailer: called with each PDF page's pixels while PDFium's buffer holds them (a
            numpy (height, width, 4) uint8 view, RGB and an unused byte, valid during the call);
            its result becomes the page's ``thumbnail`` (the layout provider's,
            :meth:`ocrstack.parsing.engines.LayoutProvider.thumbnailer`). Raster inputs have none.
        objects_reader: called as ``objects_reader(pypdfium2.raw, page, size)`` with each PDF
            page still loaded (a ``pypdfium2.PdfPage``; PDFIUM_LOCK held) and the pixel size of
            its render; its result becomes the page's ``objects`` (the text layer's object reader,
            :func:`ocrstack.parsing.textlayer.extract.page_objects`: the stages start the layout
            model from it before reading the layer). Raster inputs have none.

    Raises:
        InputError: missing, empty, corrupt or unsupported file; a user-password PDF without
            (or with a wrong) ``password``; an image over the decode limit (decompression bomb).
        UsageError: malformed or out-of-range ``pages``. ``dpi`` > 0, ``max_pixels`` >= 1 and
            ``limit`` >= 1 are the option ranges checked by :mod:`ocrstack.parsing.options`.
    """
    path = Path(path).absolute()
    sha = file_sha256(path)
    if kind(path) == "pdf":
        yield from pdf.iter_pdf(
            path, pages, dpi, password, max_pixels, limit, sha, thumbnailer, objects_reader
        )
    else:
        yield from raster.iter_image(path, pages, max_pixels, limit, sha)


def image_dpi(page: PageImage) -> float | None:
    """Resolution to record for ``page``: the render DPI of a PDF page, else the DPI the raster
    file declares (Pillow's ``info["dpi"]``), else None.

    Non-square pixels were resampled by this package to the higher of the two
    values, so that one is the page's DPI; values documents ignores as implausible (axis
    ratio over ``MAX_DPI_RATIO``) or not positive give None.
    """
    if page.dpi is not None:
        return page.dpi
    raw = page.image.info.get("dpi")
    try:
        x, y = (float(v) for v in raw)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return None
    if x <= 0 or y <= 0 or max(x, y) / min(x, y) > MAX_DPI_RATIO:
        return None
    return max(x, y)
