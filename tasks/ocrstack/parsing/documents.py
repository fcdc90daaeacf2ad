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
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import math
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image, ImageCms, ImageOps, JpegImagePlugin, UnidentifiedImageError

from ocrstack.core.errors import InputError, UsageError
from ocrstack.parsing.types import PageImage

__all__ = [
    "DECODE_LIMIT_FACTOR",
    "IMAGE_SUFFIXES",
    "PDF_SUFFIXES",
    "PDFIUM_LOCK",
    "SUPPORTED_SUFFIXES",
    "count_pages",
    "expand_inputs",
    "file_sha256",
    "iter_pages",
    "parse_page_range",
]

PDF_SUFFIXES = frozenset({".pdf"})
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp"})
SUPPORTED_SUFFIXES = PDF_SUFFIXES | IMAGE_SUFFIXES
"""File name suffixes picked up from directories (compared case-insensitively)."""

PIL_FORMATS = ("PNG", "JPEG", "TIFF", "WEBP", "BMP")
"""Pillow format plugins allowed to open raster inputs."""

DECODE_LIMIT_FACTOR = 2
"""A raster frame is decoded at full size (then downscaled) only up to this many times
``max_pixels``; beyond it the file is refused. Mirrors Pillow's own rule (``Image.open`` raises
``DecompressionBombError`` above 2 x ``Image.MAX_IMAGE_PIXELS``). JPEG is exempt up to 64 x
(:data:`JPEG_DRAFT_FACTOR`) because ``draft`` decodes at 1/2, 1/4 or 1/8 scale without
allocating the full frame."""

JPEG_DRAFT_FACTOR = 64
"""A JPEG may be up to this many times ``max_pixels``: ``draft`` decodes at 1/8 scale per side."""

MAX_DPI_RATIO = 4.0
"""Non-square pixel resolutions beyond this x/y ratio are treated as bad metadata, not resampled."""

PDF_REOPEN_EVERY = 10
"""Pages rendered per opening of a PDF; see :func:`_iter_pdf` for the measurement behind it."""

PDFIUM_LOCK = threading.RLock()
"""Serialises every PDFium call of this process (pypdfium2 issue 309: PDFium is not thread-safe)."""

_PDF_MAGIC = b"%PDF-"
_PDF_MAGIC_WINDOW = 1024  # PDF 1.7 Annex H.3: the header may follow up to 1024 bytes of junk
_WHITE = (255, 255, 255)
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


# --------------------------------------------------------------------------- inputs


def expand_inputs(inputs: Sequence[Path | str]) -> list[Path]:
    """Turn the CLI's input arguments into a list of absolute file paths.

    Files are kept in argument order (whatever their suffix; the content decides the loader,
    see :func:`iter_pages`). Directories are walked recursively, entries sorted by name at each
    level, hidden entries (names starting with ``.``) skipped, symlinked directories not
    followed, and only files whose suffix is in :data:`SUPPORTED_SUFFIXES` kept. Relative paths
    are made absolute against the current working directory (issue 3: the guide's
    relative-path pitfall must not exist). A file reached twice is listed once.

    Raises:
        InputError: a path does not exist, no input was given, or a directory holds no
            supported file; the message names the path and the fix.
    """
    if not inputs:
        raise InputError("no input given", "pass one or more PDF/image files or directories")
    seen: set[Path] = set()
    result: list[Path] = []

    def add(path: Path) -> None:
        if path not in seen:
            seen.add(path)
            result.append(path)

    for raw in inputs:
        path = Path(raw).expanduser().absolute()
        if path.is_dir():
            found = _walk_dir(path)
            if not found:
                raise InputError(
                    f"{path}: directory holds no supported input file",
                    f"put PDF or image files ({', '.join(sorted(SUPPORTED_SUFFIXES))}) in it or pass files",
                )
            for item in found:
                add(item)
        elif path.is_file():
            add(path)
        elif path.exists():
            raise InputError(
                f"{path}: not a regular file or directory", "pass a PDF, an image or a directory"
            )
        else:
            raise InputError(
                f"{path}: no such file or directory",
                f"check the path (relative paths are resolved against {Path.cwd()})",
            )
    return result


def _walk_dir(root: Path) -> list[Path]:
    """Supported files under ``root``, depth-first, sorted by name at each level."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            if path.suffix.lower() in SUPPORTED_SUFFIXES and path.is_file():
                found.append(path)
    return found


def parse_page_range(spec: str | None, n_pages: int, *, source: Path | str | None = None) -> list[int]:
    """Parse a 1-based page selection into sorted, unique 0-based page indices.

    ``spec`` is a comma-separated list of ``N`` (one page), ``A-B`` (inclusive range) or
    ``A-`` (page A to the last page), e.g. ``"1-3,7"`` -> ``[0, 1, 2, 6]``. Whitespace is
    ignored. ``None`` selects all ``n_pages`` pages. ``source`` (optional) is the input the
    selection applies to; error messages name it.

    Raises:
        UsageError: malformed spec, page 0, a reversed range, or a page beyond ``n_pages``;
            the message shows the accepted form.
    """
    if spec is None:
        return list(range(n_pages))
    fix = (
        f"{'this input has' if source is None else str(source) + ' has'} {n_pages} page(s); "
        "select 1-based pages like --pages 1-3,7 (2- = page 2 to the end)"
    )
    text = "".join(spec.split())
    if not text:
        raise UsageError("empty page selection", fix)
    selected: set[int] = set()
    for token in text.split(","):
        first, dash, last = token.partition("-")
        try:
            start = int(first)
            end = (int(last) if last else n_pages) if dash else start
        except ValueError:
            raise UsageError(f"malformed page selection '{spec}' (bad part '{token}')", fix) from None
        if not first.isdigit() or (last and not last.isdigit()):
            raise UsageError(f"malformed page selection '{spec}' (bad part '{token}')", fix)
        if start < 1:
            raise UsageError(f"invalid page range '{token}' in '{spec}' (pages start at 1)", fix)
        if max(start, end) > n_pages:
            raise UsageError(f"page {max(start, end)} in '{spec}' is beyond the last page ({n_pages})", fix)
        if end < start:
            raise UsageError(f"invalid page range '{token}' in '{spec}' (reversed)", fix)
        selected.update(range(start - 1, end))
    return sorted(selected)


def file_sha256(path: Path | str) -> str:
    """Hex sha256 of the file's bytes (the resume cache key's input part), read in chunks.

    Results are memoised per (absolute path, size, mtime in ns), so the pipeline and
    :func:`iter_pages` hashing the same unchanged file read it once.

    Raises:
        InputError: the file cannot be read.
    """
    try:
        absolute = Path(path).absolute()
        st = absolute.stat()
        return _sha256_cached(str(absolute), st.st_size, st.st_mtime_ns)
    except OSError as exc:
        raise InputError(
            f"{path}: cannot read ({exc.strerror})", "check the file exists and is readable"
        ) from exc


@functools.lru_cache(maxsize=256)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


# --------------------------------------------------------------------------- kind detection


_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"II+\x00", "tiff"),  # BigTIFF
    (b"MM\x00+", "tiff"),
    (b"BM", "bmp"),
)


def _sniff(path: Path) -> str:
    """Type from the first bytes: ``pdf``, ``png``, ``jpeg``, ``tiff``, ``webp``, ``bmp``, ``""``.

    Image signatures are checked first (a PNG text chunk may contain ``%PDF-``); then the PDF
    header, which may follow up to 1024 bytes of junk (PDF 1.7 reference, Annex H.3).

    Raises:
        InputError: missing, unreadable or empty file.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(_PDF_MAGIC_WINDOW)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", "check the path") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})", "check permissions") from exc
    if not head:
        raise InputError(f"{path}: file is empty (0 bytes)", "re-export or re-download the document")
    for magic, kind in _IMAGE_MAGIC:
        if head.startswith(magic):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if _PDF_MAGIC in head:
        return "pdf"
    return ""


def _kind(path: Path) -> str:
    """``"pdf"`` or ``"image"`` from the file's first bytes (see :func:`_sniff`).

    Raises:
        InputError: missing, unreadable or empty file, or a ``.pdf`` that is not a PDF.
    """
    kind = _sniff(path)
    if kind == "pdf":
        return "pdf"
    if not kind and path.suffix.lower() in PDF_SUFFIXES:
        raise InputError(
            f"{path}: not a PDF (no %PDF- header)",
            "re-export or re-download the document; it may be truncated",
        )
    return "image"


# --------------------------------------------------------------------------- PDF


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


def _pdf_count(path: Path, password: str | None) -> int:
    with _open_pdf(path, password) as doc, PDFIUM_LOCK:
        return len(doc)


def _iter_pdf(
    path: Path, spec: str | None, dpi: int, password: str | None, max_pixels: int, limit: int | None, sha: str
) -> Iterator[PageImage]:
    """Render the selected pages, reopening the document every :data:`PDF_REOPEN_EVERY` pages.

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
            yield _render_pdf_page(doc, path, index, dpi, max_pixels, sha, notes)
    for start in range(PDF_REOPEN_EVERY, len(selected), PDF_REOPEN_EVERY):
        if _stamp(path) != stamp:
            raise InputError(
                f"{path}: file changed while it was being read", "rerun once it is no longer written to"
            )
        with _open_pdf(path, password) as doc:
            for index in selected[start : start + PDF_REOPEN_EVERY]:
                yield _render_pdf_page(doc, path, index, dpi, max_pixels, sha, notes)


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
) -> PageImage:
    notes = list(doc_notes)
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
            bitmap = page.render(
                scale=scale,
                may_draw_forms=True,
                fill_color=(255, 255, 255, 255),
                rev_byteorder=True,  # RGB byte order -> a PIL "RGB" image without a copy-swap
            )
            try:
                image = bitmap.to_pil().convert("RGB")  # convert() copies out of PDFium's buffer
            finally:
                bitmap.close()
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
        source=str(path), index=index, image=image, dpi=effective_dpi, source_sha256=sha, notes=tuple(notes)
    )


# --------------------------------------------------------------------------- images


def _open_image(path: Path) -> Image.Image:
    """Open (lazily, header only) a raster file with the allowed Pillow plugins.

    Pillow refuses files over ``2 * Image.MAX_IMAGE_PIXELS`` at open; a JPEG is then reopened
    without that check because :func:`_frame_to_rgb` can decode it at 1/8 scale (``draft``)
    and applies its own limits before decoding anything.

    Raises:
        InputError: unsupported or corrupt file, or a decompression bomb that is not a JPEG.
    """
    try:
        return Image.open(path, formats=PIL_FORMATS)
    except Image.DecompressionBombError as exc:
        if _sniff(path) == "jpeg":
            try:
                return JpegImagePlugin.JpegImageFile(str(path))
            except (OSError, SyntaxError, ValueError):
                pass
        raise InputError(
            f"{path}: image refused as a decompression bomb ({exc})",
            "downscale the image before parsing it",
        ) from exc
    except UnidentifiedImageError as exc:
        raise InputError(
            f"{path}: not a supported document (want PDF, PNG, JPEG, TIFF, WebP or BMP)",
            "convert it to PDF or PNG, or check it is not truncated",
        ) from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read image ({exc})", "check the file; re-export it") from exc


def _n_pages(im: Image.Image) -> int:
    """Pages of an opened raster file: every TIFF frame; other formats only their first frame."""
    return int(getattr(im, "n_frames", 1)) if im.format == "TIFF" else 1


def _image_count(path: Path) -> int:
    with _open_image(path) as im:
        return _n_pages(im)


def _iter_image(
    path: Path, spec: str | None, max_pixels: int, limit: int | None, sha: str
) -> Iterator[PageImage]:
    with _open_image(path) as im:
        n_pages = _n_pages(im)
        selected = parse_page_range(spec, n_pages, source=path)
        if limit is not None:
            selected = selected[:limit]
        extra = int(getattr(im, "n_frames", 1)) - n_pages
        for index in selected:
            try:
                im.seek(index)
                image, notes = _frame_to_rgb(im, path, index, max_pixels, multi=n_pages > 1)
            except InputError:
                raise
            except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError) as exc:
                what = f"frame {index + 1} " if n_pages > 1 else ""
                raise InputError(
                    f"{path}: {what}cannot be decoded ({exc})",
                    "check the file is complete; re-export it",
                ) from exc
            if extra > 0:
                notes.insert(0, f"{im.format} file with {extra + 1} frames: only the first is a page")
            yield PageImage(
                source=str(path), index=index, image=image, dpi=None, source_sha256=sha, notes=tuple(notes)
            )


def _frame_to_rgb(
    im: Image.Image, path: Path, index: int, max_pixels: int, *, multi: bool
) -> tuple[Image.Image, list[str]]:
    """Decode the current frame within the pixel budget; return (RGB image on white, notes).

    Order: size check from the header (refuse bombs, JPEG ``draft``), decode, EXIF
    orientation, mode -> RGB on white, then one resize for square pixels and the budget.
    """
    notes: list[str] = []
    width, height = im.size  # from the header; nothing decoded yet
    pixels = width * height
    where = f"{path} (frame {index + 1})" if multi else str(path)
    if pixels > max_pixels:
        if im.format in ("JPEG", "MPO"):
            limit = max_pixels * JPEG_DRAFT_FACTOR
            if pixels > limit:
                raise _bomb(where, width, height, limit)
            im.draft(None, _fit(width, height, max_pixels))  # DCT scaling 1/2, 1/4, 1/8 while decoding
        elif pixels > max_pixels * DECODE_LIMIT_FACTOR:
            raise _bomb(where, width, height, max_pixels * DECODE_LIMIT_FACTOR)
    im.load()
    orientation = im.getexif().get(0x0112, 1)
    natural = _square_size((width, height), im.info.get("dpi"), notes)  # stored axes
    image = _exif_upright(im, notes)
    if orientation in (5, 6, 7, 8):  # transposed: width and height swap
        natural = (natural[1], natural[0])
    image = _to_rgb_on_white(image, notes)
    if image is im and multi:  # the next seek() would overwrite the yielded pixels
        image = im.copy()
    target = _fit(natural[0], natural[1], max_pixels)
    if target != natural:
        notes.append(
            f"downscaled from {natural[0]}x{natural[1]} to {target[0]}x{target[1]} pixels "
            f"(budget {max_pixels} pixels)"
        )
    if target != image.size:
        image = image.resize(target, Image.Resampling.LANCZOS)
    return image, notes


def _bomb(where: str, width: int, height: int, limit: int) -> InputError:
    return InputError(
        f"{where}: image of {width}x{height} = {width * height} pixels exceeds the decode limit "
        f"of {limit} pixels (possible decompression bomb)",
        "downscale the image first, or raise the pixel budget (--max-pixels) if it is genuine",
    )


def _fit(width: int, height: int, max_pixels: int) -> tuple[int, int]:
    """Largest (w, h) with the same aspect ratio and w * h <= max_pixels (each side >= 1)."""
    if width * height <= max_pixels:
        return width, height
    factor = math.sqrt(max_pixels / (width * height))
    w, h = max(1, math.floor(width * factor)), max(1, math.floor(height * factor))
    while w * h > max_pixels and (w > 1 or h > 1):
        w, h = max(1, w - 1), max(1, h - 1)
    return w, h


def _exif_upright(image: Image.Image, notes: list[str]) -> Image.Image:
    """Apply the EXIF Orientation tag (camera photos), noting it."""
    orientation = image.getexif().get(0x0112, 1)
    if orientation in (None, 1):
        return image
    notes.append(f"EXIF orientation {orientation} applied")
    return ImageOps.exif_transpose(image)


def _square_size(size: tuple[int, int], dpi: object, notes: list[str]) -> tuple[int, int]:
    """Size that makes non-square pixels square (e.g. fax 204 x 196 DPI: the lower-DPI axis is
    stretched to the higher DPI). Differences under 1 % and ratios over :data:`MAX_DPI_RATIO`
    (implausible metadata) are ignored."""
    try:
        xdpi, ydpi = (float(v) for v in dpi)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return size
    if xdpi <= 0 or ydpi <= 0 or abs(xdpi - ydpi) / max(xdpi, ydpi) < 0.01:
        return size
    if max(xdpi, ydpi) / min(xdpi, ydpi) > MAX_DPI_RATIO:
        notes.append(f"ignored implausible resolution {xdpi:g}x{ydpi:g} DPI")
        return size
    target = max(xdpi, ydpi)
    new = (round(size[0] * target / xdpi), round(size[1] * target / ydpi))
    notes.append(f"non-square pixels {xdpi:g}x{ydpi:g} DPI resampled to {target:g} DPI: {size} -> {new}")
    return new


def _to_rgb_on_white(image: Image.Image, notes: list[str]) -> Image.Image:
    """Any Pillow mode -> RGB; transparency composited over white, 16/32-bit grey scaled to 8 bit."""
    mode = image.mode
    if mode == "RGB":
        return image
    if mode == "CMYK":
        icc = image.info.get("icc_profile")
        if icc:
            try:
                src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
                dst = ImageCms.createProfile("sRGB")
                notes.append("CMYK converted to RGB with the embedded ICC profile")
                return ImageCms.profileToProfile(image, src, dst, outputMode="RGB")
            except (ImageCms.PyCMSError, OSError):
                pass
        notes.append("CMYK converted to RGB")
        return image.convert("RGB")
    if mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
        arr = np.asarray(image, dtype=np.float64)
        peak = 65535.0 if mode.startswith("I;16") or arr.max(initial=0) <= 65535 else float(arr.max())
        if mode == "F" and arr.max(initial=0) <= 1.0:
            peak = 1.0
        grey = np.clip(np.rint(arr * (255.0 / peak)), 0, 255).astype(np.uint8)
        notes.append(f"{mode} greyscale scaled to 8 bit (0..{peak:g} -> 0..255)")
        return Image.fromarray(grey, "L").convert("RGB")
    has_alpha = mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info
    if has_alpha:
        rgba = image.convert("RGBA")
        if rgba.getextrema()[3][0] < 255:
            notes.append("transparent areas composited on white")
        background = Image.new("RGBA", rgba.size, _WHITE + (255,))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")


# --------------------------------------------------------------------------- public API


def count_pages(path: Path, password: str | None = None) -> int:
    """Number of pages of a PDF, frames of a (multi-page) TIFF, or 1 for other images.

    Raises:
        InputError: missing, empty, corrupt, unsupported or password-protected file.
    """
    path = Path(path).absolute()
    if _kind(path) == "pdf":
        return _pdf_count(path, password)
    return _image_count(path)


def iter_pages(
    path: Path,
    *,
    pages: str | None = None,
    dpi: int = 200,
    password: str | None = None,
    max_pixels: int = 40_000_000,
    limit: int | None = None,
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

    Raises:
        InputError: missing, empty, corrupt or unsupported file; a user-password PDF without
            (or with a wrong) ``password``; an image over the decode limit (decompression bomb).
        UsageError: malformed or out-of-range ``pages``, ``dpi`` or ``max_pixels`` not positive.
    """
    if dpi <= 0:
        raise UsageError(f"--dpi must be positive, got {dpi}", "use e.g. --dpi 200")
    if max_pixels <= 0:
        raise UsageError(f"pixel budget must be positive, got {max_pixels}", "use e.g. 40000000")
    if limit is not None and limit < 0:
        raise UsageError(f"--limit must be >= 0, got {limit}", "use e.g. --limit 1")
    path = Path(path).absolute()
    kind = _kind(path)
    sha = file_sha256(path)
    if kind == "pdf":
        yield from _iter_pdf(path, pages, dpi, password, max_pixels, limit, sha)
    else:
        yield from _iter_image(path, pages, max_pixels, limit, sha)
