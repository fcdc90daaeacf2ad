"""Reading again what rapidocr's whole-page pass missed (issue 10 item 7).

rapidocr's whole-page detector misses short lines on an otherwise blank page that it reads on
a crop: two 12 pt lines at the top of a blank A4 page, a 1-bit fax page with one short line
(tests/parsing/test_sparse_pages.py). :class:`RereadMixin` gives a recognizer with a
``read_lines(image) -> list[Line]`` method a retry at another scale for a page without any
line and a crop reading for blocks left short.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from PIL import Image

from ocrstack.parsing import geometry
from ocrstack.parsing.geometry import covered
from ocrstack.parsing.lines.assign import Line, assign_lines
from ocrstack.parsing.lines.titles import ink_rows
from ocrstack.parsing.types import Block, Category, PageImage

#: A page on which the whole-page pass finds no text line is read again at this scale (issue 10
#: item 7): two short 12 pt lines at the top of a blank A4 page at 200 DPI gave no detection at
#: scale 1, 0.75 or 1.5 and both lines at 0.5 (DejaVu Serif, tests/parsing/test_sparse_pages.py).
RETRY_SCALE = 0.5
#: Padding (pixels at 200 DPI) around an empty block read again from its own crop
#: (:meth:`RereadMixin.reread_empty`): 8 px = 1 mm keeps cut glyphs whole.
REREAD_PAD = 8
#: Blocks read again from their crops when the whole-page pass left them short
#: (:meth:`RereadMixin.reread_empty`), and the most ink rows a block may have for a
#: partial reading to count as short (a few-line header or title; a long block is not re-read).
REREAD = frozenset(
    {
        Category.TEXT,
        Category.TITLE,
        Category.HEADER,
        Category.FOOTER,
        Category.PAGE_NUMBER,
        Category.LIST,
        Category.CAPTION,
        Category.FOOTNOTE,
        Category.REFERENCE,
    }
)
REREAD_MAX_ROWS = 3


class RereadMixin:
    """Second readings for a whole-page recognizer; the class using it provides ``read_lines``."""

    read_lines: Callable[[Image.Image], list[Line]]  # the recognizer's: lines of an image

    def read_region(self, image: Image.Image) -> list[Line]:
        """Lines of a block's crop (the recognizer may detect a crop differently from a page)."""
        return self.read_lines(image)

    def read_page_lines(self, image: Image.Image) -> list[Line]:
        """:meth:`read_lines` of a whole page; when it finds nothing, the page is read again at
        ``RETRY_SCALE`` (boxes scaled back to ``image`` pixels) before it is taken as blank:
        rapidocr's detector misses short lines on an otherwise blank page (issue 10 item 7)."""
        lines = self.read_lines(image)
        if lines or min(image.size) * RETRY_SCALE < 32:
            return lines
        small = image.resize(
            (round(image.width * RETRY_SCALE), round(image.height * RETRY_SCALE)), Image.Resampling.LANCZOS
        )
        return [
            dataclasses.replace(ln, bbox=tuple(v / RETRY_SCALE for v in ln.bbox))  # type: ignore[arg-type]
            for ln in self.read_lines(small)
        ]

    def read_crop(self, page: PageImage, block: Block) -> list[Line]:
        """Lines read from ``block``'s own crop (padded by ``REREAD_PAD`` at 200 DPI,
        :meth:`read_region`), in page pixels."""
        x0, y0, x1, y1 = geometry.pad(block.bbox, REREAD_PAD * (page.dpi or 200) / 200, page.size)
        if x1 - x0 < 2 or y1 - y0 < 2:
            return []
        crop = page.image.crop((round(x0), round(y0), round(x1), round(y1)))
        dx, dy = round(x0), round(y0)
        return [
            dataclasses.replace(ln, bbox=(ln.bbox[0] + dx, ln.bbox[1] + dy, ln.bbox[2] + dx, ln.bbox[3] + dy))
            for ln in self.read_region(crop)
        ]

    def reread_empty(self, page: PageImage, blocks: list[Block], lines: Sequence[Line] = ()) -> None:
        """Read text blocks the whole-page pass left short again from their own crops
        (:meth:`read_crop`), in place; lines of the crop's margin that belong to a neighbour
        (less than half inside the block) are dropped.

        Read again: a block of a category in :data:`REREAD` that got no text, or that got fewer
        rows than it has rows of ink (:func:`~ocrstack.parsing.lines.titles.ink_rows`)
        when those are at most ``REREAD_MAX_ROWS``. Only crop lines the whole-page pass did not
        read are new (a crop line mostly inside one of ``lines``, the page's lines, is dropped:
        a neighbouring block that took that line keeps it, nothing is written twice); the block
        is then made of its own page lines and the new ones, kept when that gives more rows.
        Such a block carries a warning. Issue 10 item 7: rapidocr's
        whole-page detector found no text (at 200 DPI) or one of two lines (150 DPI) in a header
        block of two 12 pt lines that the same detector reads on the block's crop. Formulas,
        tables and figures are left alone: a crop of a formula reads as noise (math_zh_gaokao_exam).
        """
        gray = None
        for b in blocks:
            if b.category not in REREAD or b.label == "recovered":
                continue
            have = [r for r in b.text.splitlines() if r.strip()]
            if have:
                if len(have) >= REREAD_MAX_ROWS:
                    continue
                if gray is None:
                    gray = np.asarray(page.image.convert("L"))
                if len(ink_rows(gray, b.bbox)) <= len(have):
                    continue
            fresh = [
                c for c in self.read_crop(page, b) if not any(covered(c.bbox, ln.bbox) >= 0.5 for ln in lines)
            ]
            if not fresh:
                continue
            own = [ln for ln in lines if covered(ln.bbox, b.bbox) >= 0.5]
            trial = dataclasses.replace(b, text="", warnings=[])
            assign_lines([trial], own + fresh, structured=False)
            if len([r for r in trial.text.splitlines() if r.strip()]) > len(have):
                b.text, b.bbox = trial.text, trial.bbox
                b.warnings.append("read again from its own crop: the whole-page pass found less text in it")
