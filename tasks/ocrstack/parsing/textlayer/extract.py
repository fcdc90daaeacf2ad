"""Characters of a PDF page's text layer with their boxes in page pixels (pypdfium2 / PDFium).

Every character PDFium's text page holds is returned in content-stream order with:

* its Unicode code point (``FPDFText_GetUnicode``; 0 when the font maps the glyph to nothing;
  PDFium returns UTF-16 code units, so a surrogate pair -- math italic letters such as
  U+1D465 on math_zh_gaokao_exam -- is joined into one character),
* its loose box (``FPDFText_GetLooseCharBox``: font ascent to descent, the whole line height,
  not the inked glyph) mapped into the pixels of the page rendered at ``dpi`` -- the same
  pixels :func:`ocrstack.parsing.documents.iter_pages` produces, /Rotate applied
  (``FPDF_PageToDevice``, which PDFium's renderer uses too),
* whether PDFium generated it (spaces and line breaks it inferred from positions,
  ``FPDFText_IsGenerated``), whether it is a line-end hyphen (``FPDFText_IsHyphen``; PDFium
  returns U+FFFE or "-" for those) and whether the font's ToUnicode map failed for it
  (``FPDFText_HasUnicodeMapError``); PDFium's soft-hyphen mark 0x02 is returned as U+FFFE,
  as ``PdfTextPage.get_text_range`` does,
* the text render mode of its text object (3 = invisible, 7 = clip only: the OCR layer a
  scanner or OCRmyPDF puts over a page image; ISO 32000-1 table 106) and that object's
  position in the page's painting order.

The page's image objects are returned with their painting order as well, so
:mod:`ocrstack.parsing.textlayer.soundness` can tell text painted over by a later image; the
bounds of its path objects and the count of its form XObjects tell a page of plain text
(:mod:`ocrstack.parsing.textlayer.plain`). Objects nested inside form XObjects are not walked:
their characters get ``z = -1``.

PDFium is not thread-safe: every call here holds :data:`ocrstack.parsing.documents.PDFIUM_LOCK`.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ocrstack.parsing.documents.pdfspace import PageToPixels, page_to_pixels
from ocrstack.parsing.types import BBox

#: Text render modes that paint nothing (ISO 32000-1 section 9.3.6, table 106).
INVISIBLE_MODES = (3, 7)


@dataclass(frozen=True)
class Char:
    """One text-layer character.

    Attributes:
        text: the character ('' when PDFium has no Unicode for the glyph).
        bbox: loose box (x0, y0, x1, y1) in page pixels at the render DPI, origin top-left.
        generated: PDFium inferred it (space or line break), it is not in the content stream.
        hyphen: a line-end hyphen.
        map_error: the font's ToUnicode map has no valid entry for the glyph.
        render_mode: PDF text render mode 0-7 of its text object (-1 unknown).
        z: index of its text object in the page's painting order (-1 unknown, e.g. in a form).
        font: base font name of its text object (``FPDFFont_GetBaseFontName``, e.g.
            ``ABCDEF+CMR10``; '' unknown): what the OCR sample checks (its ToUnicode map).
        direction: degrees clockwise its text is turned on the rendered page (0, 90, 180,
            270; :func:`direction`).
    """

    text: str
    bbox: BBox
    generated: bool = False
    hyphen: bool = False
    map_error: bool = False
    render_mode: int = 0
    z: int = -1
    font: str = ""
    direction: int = 0


#: A character turned within this many degrees of a multiple of 90 is written in that direction;
#: text at other angles (a diagonal stamp) keeps direction 0, as before.
DIRECTION_TOLERANCE = 10.0


def direction(angle: float, rotation: int) -> int:
    """Degrees clockwise a character is turned on the rendered page: PDFium's character angle
    ``angle`` (``FPDFText_GetCharAngle``, radians, clockwise in device space: on
    odd_rotated_text_boxes the box read bottom to top is 270, the one read top to bottom 90;
    it ignores /Rotate) plus the page's /Rotate ``rotation`` (clockwise, ISO 32000-1 table 30),
    to the nearest multiple of 90 within :data:`DIRECTION_TOLERANCE`, else 0. A negative
    ``angle`` (PDFium's error value) is 0."""
    if angle < 0:
        return 0
    deg = (math.degrees(angle) + rotation) % 360
    near = round(deg / 90) * 90
    return int(near % 360) if abs(deg - near) <= DIRECTION_TOLERANCE else 0


@dataclass
class PageText:
    """The text layer of one page.

    Attributes:
        chars: in content-stream (PDFium text page) order.
        size: (width, height) in pixels of the rendered page the boxes refer to.
        images: ``(bbox in page pixels, z)`` of each top-level image object.
        paths: bbox in page pixels of each top-level path object (rules, boxes, drawings).
        forms: number of top-level form XObjects (their content is not walked).
        rotation: the page's /Rotate (0/90/180/270), already applied to the boxes.
        cache: values derived from ``chars`` by the text-layer stage (e.g. the visible set).
        unembedded: base names of the fonts the PDF does not embed (``FPDFFont_GetIsEmbedded``):
            PDFium draws them with its Latin base-14 substitutes or a system font.
    """

    chars: list[Char] = field(default_factory=list)
    size: tuple[int, int] = (0, 0)
    images: list[tuple[BBox, int]] = field(default_factory=list)
    paths: list[BBox] = field(default_factory=list)
    forms: int = 0
    rotation: int = 0
    cache: dict = field(default_factory=dict, repr=False, compare=False)
    unembedded: set[str] = field(default_factory=set)

    def text(self) -> str:
        """All characters joined, as ``PdfTextPage.get_text_range`` would return them."""
        return "".join(c.text for c in self.chars)


def _union(a: BBox, b: BBox) -> BBox:
    if a == (0.0, 0.0, 0.0, 0.0):
        return b
    if b == (0.0, 0.0, 0.0, 0.0):
        return a
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def page_text(
    path: Path | str,
    index: int,
    size: tuple[int, int],
    password: str | None = None,
    objects_read: Callable[[PageText], None] | None = None,
) -> PageText:
    """Extract the text layer of page ``index`` (0-based) of the PDF at ``path``.

    ``size``: (width, height) in pixels of the rendered page image (``PageImage.size``); the
    boxes are scaled to it, so a page downscaled for the pixel budget still lines up.
    ``objects_read``: called with the page's :class:`PageText` once its image, path and form
    objects are in and before its characters are read (most of the time: thousands of
    characters a page), e.g. to start work those objects already call for.

    Raises:
        pypdfium2.PdfiumError: the file or page cannot be loaded (the caller, which rendered
            the page already, treats this as "no text layer").
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from ocrstack.parsing.documents import PDFIUM_LOCK

    with PDFIUM_LOCK:
        doc = pdfium.PdfDocument(str(path), password=password)
        try:
            page = doc[index]
            try:
                return _read_page(raw, page, size, objects_read)
            finally:
                page.close()
        finally:
            doc.close()


def _font_name(raw, obj) -> str:  # pdfium handles
    """Base font name of text object ``obj`` ('' when PDFium has none)."""
    font = raw.FPDFTextObj_GetFont(obj)
    if not font:
        return ""
    n = raw.FPDFFont_GetBaseFontName(font, None, 0)
    if n <= 1:
        return ""
    buf = ctypes.create_string_buffer(n)
    raw.FPDFFont_GetBaseFontName(font, buf, n)
    return buf.value.decode("utf-8", "replace")


def page_objects(raw, page, size: tuple[int, int]) -> PageText:  # pypdfium2 objects
    """The image, path and form objects of a loaded page (``page``: a ``pypdfium2.PdfPage``,
    ``raw``: ``pypdfium2.raw``), no characters, boxes in the pixels of ``size``: for the renderer,
    which holds the page already (:func:`ocrstack.parsing.documents.iter_pages` ``objects_reader``).
    The caller holds :data:`~ocrstack.parsing.documents.PDFIUM_LOCK`."""
    out = PageText(size=size, rotation=page.get_rotation())
    _read_objects(raw, page, page_to_pixels(raw, page.raw, size).box, out)
    return out


def _read_objects(raw, page, box, out: PageText) -> dict[int, int]:  # pypdfium2 objects
    """The page's top-level objects into ``out`` (images, paths, forms); returns each object's
    painting index by its address."""
    z_of: dict[int, int] = {}
    for k in range(raw.FPDFPage_CountObjects(page.raw)):
        obj = raw.FPDFPage_GetObject(page.raw, k)
        addr = ctypes.cast(obj, ctypes.c_void_p).value or 0
        z_of[addr] = k
        kind = raw.FPDFPageObj_GetType(obj)
        if kind == raw.FPDF_PAGEOBJ_FORM:
            out.forms += 1
        elif kind in (raw.FPDF_PAGEOBJ_IMAGE, raw.FPDF_PAGEOBJ_PATH):
            l_, b_, r_, t_ = (ctypes.c_float() for _ in range(4))
            if raw.FPDFPageObj_GetBounds(obj, l_, b_, r_, t_):
                bounds = box(l_.value, b_.value, r_.value, t_.value)
                if kind == raw.FPDF_PAGEOBJ_IMAGE:
                    out.images.append((bounds, k))
                else:
                    out.paths.append(bounds)
    return z_of


def _read_page(raw, page, size: tuple[int, int], objects_read=None) -> PageText:  # pypdfium2 objects
    to_px = page_to_pixels(raw, page.raw, size)
    out = PageText(size=size, rotation=page.get_rotation())
    z_of = _read_objects(raw, page, to_px.box, out)
    if objects_read is not None:
        objects_read(out)
    textpage = page.get_textpage()
    try:
        _read_chars(raw, textpage.raw, to_px, z_of, out)
    finally:
        textpage.close()
    return out


#: Character codes PDFium may mark as a line-end hyphen (``FPDFText_IsHyphen`` is asked only for
#: them): its soft-hyphen mark 0x02, "-", the soft hyphen and U+FFFE. Over the 104,457 characters
#: of the corpus and the olmOCR sample every hyphen PDFium marked was 0x02.
HYPHEN_CODES = frozenset({0x02, 0x2D, 0xAD, 0xFFFE})


def _held(fn, restype=None):  # a pypdfium2.raw function -> the same C function
    """The C function behind ``fn`` (a ``pypdfium2.raw`` function), called without releasing the
    GIL (``ctypes.PYFUNCTYPE``), with result type ``restype`` (default ``fn``'s) and its pointer
    arguments as plain addresses (``c_void_p``: call it with ints, :func:`_address`).

    The per-character reads are microseconds each, thousands a page: released and taken again
    around every call, the GIL went to the other page's thread each time (the convoy effect),
    and the text layer of a page took several times its CPU in wall time while another page was
    processed. These calls compute from PDFium's text page and call no Python code. Typed
    pointer arguments were half of each call's cost (0.54 -> 0.27 us measured here)."""
    args = [ctypes.c_void_p if issubclass(t, ctypes._Pointer) else t for t in fn.argtypes]
    proto = ctypes.PYFUNCTYPE(restype or fn.restype, *args)
    return proto(ctypes.cast(fn, ctypes.c_void_p).value)


def _address(obj) -> int:
    """The address of a ctypes pointer (``obj``'s value) or of a ctypes structure (``obj`` itself)."""
    if isinstance(obj, ctypes._Pointer):
        return ctypes.cast(obj, ctypes.c_void_p).value or 0
    return ctypes.addressof(obj)


def _read_chars(raw, tp, to_px: PageToPixels, z_of: dict[int, int], out: PageText) -> None:  # pdfium handles
    """Every character of text page ``tp`` into ``out.chars`` (see the module docstring). The render
    mode, font and direction are read once per text object (PDFium's character angle is its text
    object's: equal for every character of an object over the corpus and the olmOCR sample).
    On a page without /Rotate 90 or 270 each box is :meth:`PageToPixels.box` written out (the
    same values, a third of the time: a page holds thousands of characters)."""
    box = to_px.box
    upright = to_px.b == 0.0 and to_px.c == 0.0
    ox, oy, sx, sy = to_px.ox, to_px.oy, to_px.a, to_px.d
    rect = raw.FS_RECTF()
    rect_at, at = _address(rect), _address(tp)  # kept alive by ``rect`` and the caller's text page
    get_unicode, is_generated = _held(raw.FPDFText_GetUnicode), _held(raw.FPDFText_IsGenerated)
    loose_box, map_error = _held(raw.FPDFText_GetLooseCharBox), _held(raw.FPDFText_HasUnicodeMapError)
    is_hyphen, char_angle = _held(raw.FPDFText_IsHyphen), _held(raw.FPDFText_GetCharAngle)
    # the object's address as an int (0 for none): no pointer object to cast
    object_of = _held(raw.FPDFText_GetTextObject, ctypes.c_void_p)
    rotation = out.rotation
    chars = out.chars
    by_object: dict[int, list] = {}  # addr -> [mode, font, z, direction or None until read]
    empty: BBox = (0.0, 0.0, 0.0, 0.0)
    for i in range(raw.FPDFText_CountChars(tp)):
        code = get_unicode(at, i)
        generated = is_generated(at, i) == 1
        if generated or not loose_box(at, i, rect_at):
            bbox = empty
        elif upright:
            x0, x1, y0, y1 = (
                ox + sx * rect.left,
                ox + sx * rect.right,
                oy + sy * rect.bottom,
                oy + sy * rect.top,
            )
            bbox = (
                x1 if x1 < x0 else x0,
                y1 if y1 < y0 else y0,
                x1 if x1 > x0 else x0,
                y1 if y1 > y0 else y0,
            )
        else:
            bbox = box(rect.left, rect.bottom, rect.right, rect.top)
        addr = object_of(at, i) or 0
        known = by_object.get(addr)
        if known is None:
            obj = raw.FPDFText_GetTextObject(tp, i) if addr else None
            font_name = _font_name(raw, obj) if addr else ""
            font = raw.FPDFTextObj_GetFont(obj) if addr else None
            if font and not raw.FPDFFont_GetIsEmbedded(font):
                out.unembedded.add(font_name)
            mode = int(raw.FPDFTextObj_GetTextRenderMode(obj)) if addr else -1
            known = by_object[addr] = [mode, font_name, z_of.get(addr, -1), None]
        mode, font_name, z, turn = known
        if 0xDC00 <= code <= 0xDFFF and chars and len(chars[-1].text) == 1:
            high = ord(chars[-1].text)
            if 0xD800 <= high <= 0xDBFF:  # PDFium gives UTF-16 code units: join the pair
                prev = chars[-1]
                pair = chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00))
                chars[-1] = replace(prev, text=pair, bbox=_union(prev.bbox, bbox))
                continue
        hyphen = code in HYPHEN_CODES and (code == 0x02 or is_hyphen(at, i) == 1)
        if code == 0x02:  # PDFium's mark for a soft hyphen at a line end; get_text_range: U+FFFE
            code = 0xFFFE
        if generated:
            turn = 0
        elif not addr:
            turn = direction(char_angle(at, i), rotation)
        elif turn is None:
            turn = known[3] = direction(char_angle(at, i), rotation)
        chars.append(
            Char(
                text=chr(code) if 0 < code < 0x110000 else "",
                bbox=bbox,
                generated=generated,
                hyphen=hyphen,
                map_error=map_error(at, i) == 1,
                render_mode=mode,
                z=z,
                font=font_name,
                direction=turn,
            )
        )
