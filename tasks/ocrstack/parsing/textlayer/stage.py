"""The text-layer stage of ``ocrstack parse`` (issue 11 items 1 and 5).

Per page, for ``--text-layer auto`` (default) or ``on``:

1. :func:`read_page` extracts the layer and judges it (:mod:`.soundness`); ``auto`` then judges
   it without OCR (:func:`vouch_page`, :mod:`.vouch`: words that read as language, ink where the
   layer puts its lines) and, when that does not settle it, compares a quick OCR sample of a few
   layer lines with the layer (:func:`check_sample`), only lines in fonts not yet checked on an
   earlier page of the document (:class:`CheckedFonts`; fonts vouched for count as checked).
2. On a sound page :func:`fill_blocks` routes every layout block: it takes the layer's text
   (source ``text-layer``), or goes to recognition (source ``ocr`` / ``server``) when it has
   no layer characters (outlined text, a picture), is a figure over a raster image without
   layer text, is a formula on a math page (a page with unfaithful characters: TeX math
   fonts) and the recognizer returns LaTeX, or (not for formulas) more than
   :data:`BLOCK_BAD_LIMIT` of its characters are unfaithful. Table blocks become
   ``<table>`` HTML (:mod:`ocrstack.parsing.tables.born_digital`).
3. :func:`recognize_rest` reads the routed blocks: a block with layer glyphs line by line at
   the glyphs' line boxes (plain-text recognizers), the others with the recognizer's
   ``recognize_only``: rapidocr reads each block's crop (a whole-page read would cost as much
   as the OCR path), a cropping recognizer (openai) gets the blocks as usual.

``off`` (and raster inputs) keep the OCR path for every block. Block sources are set on
``Block.source``; the verdict goes to the page's ``text_layer`` entry in blocks.json.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from PIL import Image

from ocrstack.parsing.engines import Recognizer
from ocrstack.parsing.geometry import covered, intersection
from ocrstack.parsing.lines.assign import Line, assign_lines
from ocrstack.parsing.options import TextLayerMode
from ocrstack.parsing.tables.born_digital import has_ruled_grid, table_html
from ocrstack.parsing.textlayer import headings
from ocrstack.parsing.textlayer.extract import Char, PageText, page_text
from ocrstack.parsing.textlayer.lines import build_lines, is_vertical
from ocrstack.parsing.textlayer.sample import CheckedFonts, check_sample
from ocrstack.parsing.textlayer.soundness import (
    MIN_CHARS,
    Verdict,
    bad_reason,
    faithful,
    is_text,
    judge,
    kept,
    usable,
)
from ocrstack.parsing.textlayer.vouch import Vouched, vouch
from ocrstack.parsing.types import BBox, Block, Category, PageImage

__all__ = [
    "CheckedFonts",
    "check_sample",
    "fill_blocks",
    "layer_lines",
    "printable",
    "read_page",
    "recognize_rest",
    "usable",
    "vouch_page",
]

SOURCE_LAYER, SOURCE_OCR, SOURCE_SERVER = "text-layer", "ocr", "server"
#: Unfaithful share of a block's characters above which the block is read by OCR. Below it the
#: unfaithful characters are left out (a block's warning counts them): OCR of a text block
#: with some inline math lost more words than the few glyphs left out (math_mathtools_doc
#: page 1: two blocks with 2 of 16 unfaithful characters; math_zh_gaokao_exam page 1: 44 of
#: 48 unfaithful is math the layer cannot give).
BLOCK_BAD_LIMIT = 0.25
#: Share of the page above which a table block without a ruled grid is taken for text: the
#: corpus tables cover 3-26% of their pages; the layout model labelled all of the 3-column
#: en_multicol_pari_refcard a table (row-wise cells across the columns: order 0.30).
BIG_TABLE = 0.5
#: Share of a block an image object must cover for the block to count as a picture.
IMAGE_COVER = 0.3


def read_page(
    page: PageImage,
    mode: str,
    password: str | None = None,
    objects_read: Callable[[PageText], None] | None = None,
) -> tuple[PageText | None, Verdict]:
    """Extract and judge the text layer of ``page``; ``mode`` is ``auto``, ``on`` or ``off``;
    ``objects_read`` as :func:`~.extract.page_text` (not called when no layer is read).

    ``on`` accepts an invisible OCR layer over a scan and uses a layer whatever the
    character checks say (the reasons are kept, prefixed "used anyway"), as long as it has
    at least :data:`~.soundness.MIN_CHARS` characters. Never raises for a broken layer:
    an unreadable one is "not sound" with the error as the reason.
    """
    if mode == TextLayerMode.OFF:
        return None, Verdict(False, ["--text-layer off"])
    if page.dpi is None:
        return None, Verdict(False, ["raster input: no text layer"])
    try:
        pt = page_text(page.source, page.index, page.size, password, objects_read)
    except Exception as exc:  # PDFium rendered the page: its text is optional
        return None, Verdict(False, [f"text layer unreadable ({type(exc).__name__}: {exc})"])
    verdict = judge(pt, accept_ocr_layer=mode == TextLayerMode.ON)
    chars = verdict.counts.get("visible", 0) + verdict.counts.get("hidden", 0)
    if mode == TextLayerMode.ON and not verdict.sound and chars >= MIN_CHARS:
        verdict = Verdict(
            True, [f"used anyway (--text-layer on): {r}" for r in verdict.reasons], verdict.counts
        )
    return pt, verdict


def layer_lines(pt: PageText, accept_hidden: bool = False) -> tuple[list[Line], list[frozenset[str]]]:
    """The page's lines of usable (:func:`~.soundness.usable`), :func:`printable` characters and
    the fonts of each (:func:`~.lines.build_lines`), built once per page and kept in ``pt.cache``
    (the OCR-free check, the plain-page blocks and :func:`fill_blocks` all read them; none
    changes them)."""
    key = ("lines", accept_hidden)
    got = pt.cache.get(key)
    if got is None:
        fonts: list[frozenset[str]] = []
        lines = build_lines(pt.chars, _printable(pt, accept_hidden), fonts_out=fonts)
        got = pt.cache[key] = (lines, fonts)
    return got


def vouch_page(pt: PageText, grey: Image.Image, checked: frozenset[str] = frozenset()) -> Vouched:
    """:func:`~.vouch.vouch` on a sound page: its visible, faithful characters, its
    :func:`layer_lines`, ``grey`` the page in grey (mode ``L``, the pixels of ``pt``'s boxes)."""
    lines, _ = layer_lines(pt)
    return vouch(pt.chars, faithful(pt), lines, grey, checked)


def printable(c: Char) -> bool:
    """The character can stand in text: faithful, or an ASCII character PDFium read from the
    font's own encoding after a ToUnicode map error (TeX math fonts: the primes and letters of
    math_crc_paper; the non-ASCII guesses, Hangul and IPA letters on math_zh_gaokao_exam, are junk)."""
    return _printable_reason(bad_reason(c), c)


def _printable_reason(reason: str | None, c: Char) -> bool:
    return reason is None or (reason == "unmapped" and len(c.text) == 1 and "!" <= c.text <= "~")


def _printable(pt: PageText, accept_hidden: bool = False) -> Callable[[Char], bool]:
    """Predicate: a :func:`~.soundness.usable`, :func:`printable` character of ``pt`` (decided once
    a page: :func:`~.soundness.kept`)."""
    return kept(pt, accept_hidden, _printable_reason, "printable")


class _Index:
    """Content characters with their boxes as a numpy array, for "characters mostly inside a box"."""

    def __init__(self, chars: Sequence[Char]) -> None:
        self.chars = [c for c in chars if is_text(c)]
        self.boxes = np.array([c.bbox for c in self.chars], dtype=float).reshape(-1, 4)

    def inside(self, box: BBox) -> list[Char]:
        """Characters at least half inside ``box`` by area (:func:`ocrstack.parsing.geometry.covered`)."""
        b = self.boxes
        w = np.minimum(b[:, 2], box[2]) - np.maximum(b[:, 0], box[0])
        h = np.minimum(b[:, 3], box[3]) - np.maximum(b[:, 1], box[1])
        own = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
        inter = np.clip(w, 0, None) * np.clip(h, 0, None)
        hit = (own > 0) & (inter >= 0.5 * own)
        return [self.chars[i] for i in np.flatnonzero(hit)]


def _route(b: Block, chars: _Index, pt: PageText, math_page: bool, structured: bool) -> str | None:
    """Why block ``b`` goes to recognition, or None when the layer fills it."""
    own = chars.inside(b.bbox)
    pictured = is_pictured(b.bbox, pt)
    if b.category is Category.FORMULA and math_page and structured:
        return "formula on a math page (its text layer is not faithful; the recognizer returns LaTeX)"
    if not own:
        return (
            "picture without text-layer characters" if pictured else "no text-layer characters in the block"
        )
    bad = sum(1 for c in own if bad_reason(c))
    if bad > BLOCK_BAD_LIMIT * len(own) and not (b.category is Category.FORMULA and not structured):
        return f"{bad} of {len(own)} characters unfaithful"
    if bad:
        b.warnings.append(f"text layer: {bad} unfaithful characters (math glyphs without Unicode) left out")
    return None


def is_pictured(box: BBox, pt: PageText) -> bool:
    """An image object of ``pt`` covers :data:`IMAGE_COVER` of ``box`` (pixels): a picture."""
    return any(intersection(box, img) >= IMAGE_COVER * max(1.0, _area(box)) for img, _ in pt.images)


def _area(b: BBox) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def fill_blocks(
    page: PageImage,
    blocks: list[Block],
    pt: PageText,
    verdict: Verdict,
    password: str | None = None,
    accept_hidden: bool = False,
    structured: bool = False,
) -> tuple[list[Block], list[Block]]:
    """Route and fill ``blocks`` of a page whose layer is sound.

    Returns (blocks filled from the layer, followed by ``recovered`` blocks for layer lines no
    block holds; blocks left for recognition, each with a warning saying why). Layer blocks get
    ``source = "text-layer"``; the others are untouched apart from the warning. ``structured``:
    the recognizer returns LaTeX (a server), so formulas of math pages go to it; the embedded
    OCR returns plain text, no better than the layer's, so they go to it only when more than
    :data:`BLOCK_BAD_LIMIT` of their characters are unfaithful.
    """
    ok = usable(pt, accept_hidden)
    visible = [c for c in pt.chars if ok(c)]
    is_printable = _printable(pt, accept_hidden)
    index = _Index(visible)
    math_page = verdict.counts.get("bad", 0) > 0
    px_per_pt = (page.dpi or 72.0) / 72.0
    page_area = float(page.size[0] * page.size[1]) or 1.0
    layer_blocks, rest = [], []
    for b in blocks:
        if (
            b.category is Category.TABLE
            and _area(b.bbox) > BIG_TABLE * page_area
            and not has_ruled_grid(b.bbox, page.source, page.index, px_per_pt, password, pt.rotation)
        ):
            # en_multicol_pari_refcard: the layout model took the whole 3-column card for a table
            b.category = Category.TEXT
            b.warnings.append(
                f"table block over {_area(b.bbox) / page_area:.0%} of the page without a ruled grid: "
                "read as text"
            )
        why = _route(b, index, pt, math_page, structured)
        if why is None:
            layer_blocks.append(b)
        else:
            b.warnings.append(f"read by the recognizer: {why}")
            rest.append(b)
    every, fonts = layer_lines(pt, accept_hidden)
    routed = [r.bbox for r in rest]
    kept = [
        (ln, f)
        for ln, f in zip(every, fonts, strict=True)
        if not any(covered(ln.bbox, r) >= 0.5 for r in routed)
    ]
    lines = [ln for ln, _ in kept]
    filled = assign_lines(layer_blocks, lines, structured=True, height=page.size[1])
    headings.promote(filled, lines, [f for _, f in kept])
    good: list[Char] | None = None  # the table cells' characters, once a page
    for b in filled:
        b.source = SOURCE_LAYER
        if b.category is Category.TABLE:
            good = [c for c in visible if is_printable(c)] if good is None else good
            html = table_html(good, b.bbox, page.source, page.index, px_per_pt, password, pt.rotation)
            if html is not None:
                b.text = html
    return filled, rest


def recognize_rest(
    page: PageImage,
    blocks: list[Block],
    recognizer: Recognizer,
    pt: PageText | None = None,
    accept_hidden: bool = False,
) -> list[Block]:
    """Recognise the routed ``blocks``; sets each block's ``source`` (``server`` for a remote
    recognizer, else ``ocr``). Returns ``blocks`` in their order.

    A block that has text-layer glyphs (routed for its unfaithful characters) is read line by
    line when the recognizer reads plain text and has a line reader
    (:meth:`~ocrstack.parsing.engines.Recognizer.read_line_crops`): the glyph boxes give the
    lines even where their Unicode is wrong, so no text detection runs (rapidocr's detector on
    a block crop padded to its 736 px minimum was 0.28 s a block, the line reads 0.04 s a line).
    The others go to :meth:`~ocrstack.parsing.engines.Recognizer.recognize_only` (rapidocr: each
    block's crop; a cropping recognizer: as usual)."""
    if not blocks:
        return []
    lined: list[tuple[Block, list[BBox]]] = []
    if pt is not None and not recognizer.structured:
        ok = usable(pt, accept_hidden)
        index = _Index([c for c in pt.chars if ok(c)])
        lined = [(b, boxes) for b in blocks if (boxes := _glyph_lines(b, index))]
    if lined:
        image = page.image
        crops = [image.crop(_line_crop(box, image.size)) for _, boxes in lined for box in boxes]
        texts = recognizer.read_line_crops(crops)
        if texts is None:
            lined = []
        else:
            k = 0
            for b, boxes in lined:
                b.text = "\n".join(t.strip() for t in texts[k : k + len(boxes)] if t.strip())
                b.warnings.append(f"read line by line at the text layer's {len(boxes)} line boxes")
                k += len(boxes)
    done = {id(b) for b, _ in lined}
    rest = [b for b in blocks if id(b) not in done]
    if rest:
        recognizer.recognize_only(page, rest)
    for b in blocks:
        b.source = SOURCE_SERVER if recognizer.remote else SOURCE_OCR
    return blocks


#: Horizontal padding of a glyph-line crop, in line heights: the loose glyph boxes end at the
#: advance width, and the recognizer lost a thin first glyph ("一、" on math_zh_gaokao_exam p1)
#: at a 4 px pad; 10 px (0.3 of its 30 px line) read it.
LINE_PAD_X = 0.35


def _line_crop(box: BBox, size: tuple[int, int]) -> tuple[int, int, int, int]:
    dx = max(4.0, LINE_PAD_X * (box[3] - box[1]))
    x0, y0, x1, y1 = box[0] - dx, box[1] - 4, box[2] + dx, box[3] + 4
    return (max(0, round(x0)), max(0, round(y0)), min(size[0], round(x1)), min(size[1], round(y1)))


def _glyph_lines(b: Block, index: _Index) -> list[BBox]:
    """Line boxes of the layer glyphs mostly inside ``b`` (glyphs without Unicode included);
    [] when it has none or a line runs top to bottom (vertical text: the detector's job)."""
    own = [dataclasses.replace(c, text=c.text or "?") for c in index.inside(b.bbox)]
    lines = build_lines(own)
    if not lines or any(is_vertical(ln) for ln in lines):
        return []
    return [ln.bbox for ln in lines]
