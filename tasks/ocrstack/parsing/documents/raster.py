"""Raster inputs (PNG, JPEG, TIFF, WebP, BMP) read with Pillow: every TIFF frame a page, RGB on
white, EXIF orientation applied, square pixels, within the pixel budget (decompression bombs
refused). See :mod:`ocrstack.parsing.documents` for the rules.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image, ImageCms, ImageOps, JpegImagePlugin, UnidentifiedImageError

from ocrstack.core.errors import InputError
from ocrstack.parsing.documents.inputs import sniff
from ocrstack.parsing.documents.ranges import parse_page_range
from ocrstack.parsing.types import PageImage

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

_WHITE = (255, 255, 255)


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
        if sniff(path) == "jpeg":
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


def count(path: Path) -> int:
    with _open_image(path) as im:
        return _n_pages(im)


def iter_image(
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
