"""Running heads, footers and page numbers found by position and repetition (issue 22 class 1).

The layout model labels each block on its own page; it misses a journal footer labelled text
beside a block it called footer, a lone corner page number, a book's running head. Seen over the
whole document (:func:`running_blocks`), a text block in the top or bottom margin band
(:data:`MARGIN`) is paratext when

* its text, digits masked, repeats in the same band on at least :func:`min_repeats` pages
  (a running head or footer, page numbers included), or
* it is a page number on its own (``12``, ``- 12 -``, ``Page 12``, ``12 of 40``, ``xii``), or
* it shares a line with a block the layout model labelled paratext (same band, overlapping
  vertically by half its height), or
* the page's text comes from its text layer and this block's does not (:data:`PICTURED`: it
  was read from pixels, a picture or outlined glyphs): a logo or letterhead in the margin
  (a university's wordmark over its repository cover page).

Anywhere down the page, a text block in the left or right margin band (:data:`SIDE`) that is a
line set top to bottom (at least :data:`STAMP_RATIO` times taller than wide) and reads as a
phrase (at least :data:`STAMP_WORDS` words) is a side stamp: a repository's "Downloaded from
... on <date>", arXiv's identifier and date, a journal's side banner (:func:`side_stamp`). An
exam's binding-margin labels (NAME, SEAT: one word each) stay.

Such blocks are dropped with the labelled paratext unless ``--keep-paratext``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.types import Block, Category

#: Share of the page height at the top and at the bottom that holds running heads and footers
#: (journal and book pages: 5-8 %).
MARGIN = 0.08
_ROMAN = r"(?=[ivxlc])x{0,3}(ix|iv|v?i{0,3})|(?=[ivxlc])l?x{0,3}(ix|iv|v?i{0,3})|c{1,3}"
_NUMBER = re.compile(rf"^[\s\-–—|]*(page\s*)?(\d{{1,4}}|{_ROMAN})(\s*(of|/)\s*\d{{1,4}})?[\s\-–—|]*$", re.I)
_TEXT_LIKE = (Category.TEXT, Category.TITLE)
#: ``Block.source`` of text read from the page's pixels (:mod:`ocrstack.parsing.textlayer.stage`).
PICTURED = ("ocr", "server")
#: Share of the page width at the left and at the right that holds side stamps (arXiv's stamp
#: lies 10-40 pt from the edge of a 612 pt page: within 7 %).
SIDE = 0.08
#: A side stamp's box is at least this many times taller than wide (one line set top to bottom).
STAMP_RATIO = 4.0
#: Least words of a side stamp: a sentence or an identifier with its date, not a one-word label.
STAMP_WORDS = 3


def side_stamp(b: Block, width: float) -> bool:
    """``b`` is a side stamp (see the module docstring) on a page ``width`` pixels wide."""
    w, h = b.bbox[2] - b.bbox[0], b.bbox[3] - b.bbox[1]
    aside = b.bbox[2] <= SIDE * width or b.bbox[0] >= (1 - SIDE) * width
    return aside and h >= STAMP_RATIO * max(w, 1.0) and len(b.text.split()) >= STAMP_WORDS


def min_repeats(pages: int) -> int:
    """Pages on which a margin text must recur to be a running head: 2 in a document of 2-4
    pages, else 3 (or a third of the pages, whichever is more)."""
    return 2 if pages <= 4 else max(3, pages // 3)


def _band(b: Block, height: float) -> str | None:
    if b.bbox[3] <= MARGIN * height:
        return "top"
    if b.bbox[1] >= (1 - MARGIN) * height:
        return "bottom"
    return None


def _key(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(text.lower().split()))


def _beside_paratext(b: Block, page: PageResult) -> bool:
    h = b.bbox[3] - b.bbox[1]
    for o in page.blocks:
        if o is b or not o.category.is_paratext:
            continue
        overlap = min(b.bbox[3], o.bbox[3]) - max(b.bbox[1], o.bbox[1])
        if h > 0 and overlap >= 0.5 * h:
            return True
    return False


def running_blocks(pages: Sequence[PageResult]) -> dict[int, set[int]]:
    """``{page index: {block order}}`` of text blocks that are running heads, footers or page
    numbers by the rules of the module docstring."""
    found: dict[int, set[int]] = defaultdict(set)
    seen: dict[tuple[str, str], set[int]] = defaultdict(set)
    margin: list[tuple[PageResult, Block, str]] = []
    for p in pages:
        if p.error:
            continue
        layered = any(b.source == "text-layer" for b in p.blocks)
        for b in p.blocks:
            if b.category in _TEXT_LIKE and side_stamp(b, p.size[0]):
                found[p.index].add(b.order)
                continue
            band = _band(b, p.size[1]) if b.category in _TEXT_LIKE and b.text.strip() else None
            if band is None:
                continue
            margin.append((p, b, band))
            seen[(band, _key(b.text))].add(p.index)
            if _NUMBER.match(b.text.strip()) or _beside_paratext(b, p) or (layered and b.source in PICTURED):
                found[p.index].add(b.order)
    need = min_repeats(len(pages))
    if len(pages) >= 2:
        for p, b, band in margin:
            if len(seen[(band, _key(b.text))]) >= need:
                found[p.index].add(b.order)
    return dict(found)
