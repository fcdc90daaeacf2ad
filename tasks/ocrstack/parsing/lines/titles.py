"""The title rule for ``header`` blocks, measured on the page image (issue 10 item 7).

Runs in the page's ``paratext`` stage (:mod:`ocrstack.parsing.stages`) before any recognizer,
so a cropping recognizer (openai) is sent the title instead of skipping it as paratext. The
line-height rule for whole-page line readers stays in
:func:`promote_title_lines`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from statistics import median
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from ocrstack.parsing.types import BBox, Block, Category

if TYPE_CHECKING:
    from ocrstack.parsing.lines.line import Line

#: A header block whose ink rows are this many times the body's is a title. Measured on page 1
#: of every corpus PDF (rapid-layout blocks, 200 DPI): the en_twocol_ltnews24 masthead 2.58x;
#: running heads and page numbers 0.78-1.33x (bzip2 1.26, Debian reference 1.33); the
#: "CUI (when filled in)" banner of odd_encrypted_owner_only_dd0293 1.62x, a marking, not a
#: title; the en_multicol_pari_refcard title only 1.17x (bold 12 pt over 9 pt: left to the
#: line rule of :func:`promote_title_lines`).
TITLE_INK_RATIO = 1.8
#: A title block starts in this top share of the first page ("high on page 1", issue 10 item 7).
TITLE_TOP_SHARE = 0.25
#: Ink measure (see :func:`ink_rows`): grey level below which a pixel is ink, and the share of
#: the densest row's ink a row needs to count (2 %: the ascender rows of a line of lowercase
#: text hold a few stems, 3 px each, of a core row's hundreds of ink pixels; a share of the
#: block's width instead cut the ascenders of body text in a block wider than its lines).
INK_LEVEL = 128
INK_MIN_SHARE = 0.02


def ink_rows(gray: np.ndarray, bbox: BBox) -> list[tuple[int, int]]:
    """Runs of inked rows (start, end; page pixels, end exclusive) inside ``bbox`` of ``gray``
    (a 2-D uint8 page array, 0 = black): a row is inked when it holds at least ``INK_MIN_SHARE``
    of the densest row's count (and 2) of pixels darker than ``INK_LEVEL``; runs closer than
    2 px are one run (a broken stroke), runs under 3 px are dropped (rules, specks)."""
    h, w = gray.shape
    x0, y0 = max(0, int(bbox[0])), max(0, int(bbox[1]))
    x1, y1 = min(w, int(math.ceil(bbox[2]))), min(h, int(math.ceil(bbox[3])))
    if x1 - x0 < 2 or y1 - y0 < 2:
        return []
    dark = (gray[y0:y1, x0:x1] < INK_LEVEL).sum(axis=1)
    inked = dark >= max(2, INK_MIN_SHARE * dark.max())
    runs: list[list[int]] = []
    for y in np.flatnonzero(inked):
        if runs and y - runs[-1][1] <= 2:
            runs[-1][1] = int(y) + 1
        else:
            runs.append([int(y), int(y) + 1])
    return [(y0 + a, y0 + b) for a, b in runs if b - a >= 3]


def _rows_in(image: Image.Image, bbox: BBox) -> list[tuple[int, int]]:
    """:func:`ink_rows` of ``bbox`` on the page ``image`` (any Pillow mode, in 8-bit grey as
    ``convert("L")`` gives it), measured on the block's crop: the same rows as on the whole page
    in grey, without a grey copy and an array of the whole page (two page-sized buffers)."""
    w, h = image.size
    x0, y0 = max(0, int(bbox[0])), max(0, int(bbox[1]))
    x1, y1 = min(w, int(math.ceil(bbox[2]))), min(h, int(math.ceil(bbox[3])))
    if x1 - x0 < 2 or y1 - y0 < 2:
        return []
    crop = image.crop((x0, y0, x1, y1))
    gray = np.asarray(crop if crop.mode == "L" else crop.convert("L"))
    return [(y0 + a, y0 + b) for a, b in ink_rows(gray, (0, 0, x1 - x0, y1 - y0))]


def promote_title_headers(blocks: list[Block], image: Image.Image, page_index: int) -> list[Block]:
    """Turn ``header`` blocks that are really the document title back into content, in place;
    returns the blocks changed. Works before any recognizer ran: heights are measured on the
    page image block by block (:func:`ink_rows` of each block's crop in grey), not on
    recognised lines.

    rapid-layout labels the masthead of en_twocol_ltnews24 ("LaTeX News" / "Issue 24,
    February 2016") ``header``, and assembly drops headers (a cropping recognizer was never even
    sent it). So on the first page of a document (``page_index`` 0), a header block starting in
    the top ``TITLE_TOP_SHARE`` of the page whose ink rows' median height is at least
    ``TITLE_INK_RATIO`` times the median ink row height of the page's text blocks (or, with
    none, its table/reference/footnote blocks)
    becomes a TITLE, and header blocks stacked right under it (vertical gap at most one body
    row height, overlapping horizontally: the masthead's subtitle) become TEXT. Each changed
    block gets a warning. No such block, no measure: nothing changes.
    """
    if page_index != 0 or not any(b.category is Category.HEADER for b in blocks):
        return []
    text = [b for b in blocks if b.category in (Category.TEXT, Category.LIST)]
    if not text:  # en_multicol_pari_refcard: rapid-layout boxes the whole body as one table
        text = [b for b in blocks if b.category in (Category.TABLE, Category.REFERENCE, Category.FOOTNOTE)]
    body = [z - a for b in text for a, z in _rows_in(image, b.bbox)]
    if not body:
        return []
    lh = float(median(body))
    high = (
        b
        for b in sorted(blocks, key=lambda x: x.bbox[1])
        if b.category is Category.HEADER and b.bbox[1] <= TITLE_TOP_SHARE * image.height
    )
    measured = ((b, _rows_in(image, b.bbox)) for b in high)
    heights = ((b, float(median(z - a for a, z in runs))) for b, runs in measured if runs)
    return promote_headers(heights, lh, TITLE_INK_RATIO)


def promote_headers(candidates: Iterable[tuple[Block, float]], lh: float, ratio: float) -> list[Block]:
    """The promotion both title rules share; returns the blocks changed, each with a warning.

    ``candidates``: header blocks top to bottom with their own text height; ``lh``: the body's
    line height in the same unit (pixels of ink rows or of line boxes). A header at least
    ``ratio`` x ``lh`` becomes a TITLE; a header right under a promoted one (vertical gap at most
    ``lh``, overlapping horizontally: the masthead's subtitle) becomes TEXT.
    """
    promoted: list[Block] = []
    for b, own_h in candidates:
        if own_h >= ratio * lh:
            b.category = Category.TITLE
            b.warnings.append(
                f"header block with title-size text ({own_h / lh:.1f}x the body line height) kept as a title"
            )
            promoted.append(b)
        elif any(
            0 <= b.bbox[1] - p.bbox[3] <= lh and min(b.bbox[2], p.bbox[2]) > max(b.bbox[0], p.bbox[0])
            for p in promoted
        ):
            b.category = Category.TEXT
            b.warnings.append("header block right under a title-size header kept as text (title block)")
            promoted.append(b)
    return promoted


#: A header block whose lines are this many times the page's median line height is a title
#: (see :func:`promote_title_lines`; the image rule of :mod:`.titles` has its own ratio).
#: 1.4: re-measured after the detector was sized by the page's text height (rapidocr.reading):
#: the en_multicol_pari_refcard title is now 45.7 px over a 31.1 px median line, 1.47x.
TITLE_HEIGHT_RATIO = 1.4


def promote_title_lines(blocks: list[Block], owners: dict[int, list[Line]], lines: list[Line]) -> None:
    """Turn ``header`` blocks that are really a title back into content, in place, from the
    heights of recognised lines (whole-page line readers: rapidocr, the text layer; the rule
    for every recognizer, measured on the page image, is :func:`promote_title_headers`).

    Kept beside the image rule because it is the stronger signal where lines exist: rapidocr's
    padded line boxes put the title of en_multicol_pari_refcard at 1.7x the body, while its
    ink is only 1.2-1.4x the body rows (bold 12 pt over 9 pt), as close as the running heads
    of bzip2 (1.26x) and the Debian reference (1.33x).

    rapid-layout labels the masthead of en_twocol_ltnews24 ("LaTeX News" / "Issue 24,
    February 2016") and the title of en_multicol_pari_refcard ("Pari-GP reference card")
    ``header``, and assembly drops headers. Running heads are set at or below body size
    (every header of the corpus pages: 0.9-1.2x the page's median line height), those titles
    at 1.47-2.4x (the pari title since the detector is sized by text height). So a header block
    whose own lines' median height is at least ``TITLE_HEIGHT_RATIO`` times the page's median line
    height becomes a TITLE, and header blocks stacked right under it (vertical gap at most one
    median line height, overlapping horizontally: the masthead's subtitle) become TEXT. Each changed
    block gets a warning.
    """
    heights = [ln.bbox[3] - ln.bbox[1] for ln in lines]
    if not heights:
        return
    headers = (
        (b, median(ln.bbox[3] - ln.bbox[1] for ln in owners[i]))
        for i, b in sorted(enumerate(blocks), key=lambda t: t[1].bbox[1])
        if b.category is Category.HEADER and owners[i]
    )
    promote_headers(headers, median(heights), TITLE_HEIGHT_RATIO)
