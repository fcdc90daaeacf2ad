"""Text that exists only in a picture of a page read from its text layer (issue 22 class 9).

A book cover, a poster or a slide is often one raster picture with a few layer words set over it:
the layer holds the title, the picture holds the rest ("by FutureSkill" on a course cover, a
tagline, a logo's words). The layout model calls the whole a figure block, the layer fills it with
its few words, and without this module the picture's own words were never read in the default
mode (``--text-layer off`` found them).

:func:`read_pictures`: every figure block filled from the layer that lies over a raster image
(an image object covering :data:`~.stage.IMAGE_COVER` of the block, as the stage's routing
counts a picture) is also read by an embedded (plain-text) recognizer; each OCR line is added
to the block's text unless it repeats the page's layer (:func:`repeats`: its letters inside or
:data:`SIMILAR` alike a layer line or two, or :data:`REPEAT` of its words already in the block's
layer text) or holds fewer than :data:`MIN_LETTERS` letters (a digit read from a photo's
texture). A figure over a picture with no layer characters goes to the recognizer already (the
stage's routing); a structured recognizer (a served VLM) is not asked: it costs a request a
picture and returns Markdown, not lines.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from ocrstack.parsing.engines import Recognizer
from ocrstack.parsing.lines.script import drop_stray_han
from ocrstack.parsing.textlayer.extract import PageText
from ocrstack.parsing.textlayer.stage import SOURCE_OCR, is_pictured
from ocrstack.parsing.types import Block, Category, PageImage

__all__ = ["MIN_LETTERS", "PAGE_KEY", "REPEAT", "SIMILAR", "read_pictures", "repeats"]

#: Fewest letters an OCR line of a picture needs to be kept ("2" read from a photo is not text).
MIN_LETTERS = 3
#: Share of an OCR line's words already in the block's layer text from which the line is a
#: repeat of the layer (the title set over the picture, read again from the pixels). Not 0.5:
#: "THE VISION" under a layer title "THE POWER OF ..." shares its "the" and is new text.
REPEAT = 0.75
#: ``difflib`` ratio of an OCR line's letters to a layer line's (or two adjacent ones') from which
#: it is that line misread ("STORYTELLNG" for "STORYTELLING": 0.96; unrelated lines stay < 0.6).
SIMILAR = 0.8
#: Fewest letters of an OCR line for a match anywhere in the page's layer letters to count (a
#: shorter key is found in running text by chance).
PAGE_KEY = 6

_WORD = re.compile(r"\w+")
_LETTER = re.compile(r"[^\W\d_]")


def _letters(text: str) -> str:
    return "".join(_LETTER.findall(text.casefold()))


def repeats(line: str, layer: str, page_letters: str = "") -> bool:
    """True when OCR ``line`` says again what ``layer`` (the page's layer text, lines split on
    newlines) says: its letters lie inside a layer line or two adjacent ones, or are
    :data:`SIMILAR` alike one, or :data:`REPEAT` of its words are layer words; or, from
    :data:`PAGE_KEY` letters on, lie anywhere in ``page_letters`` (the letters of the page's whole
    layer in content order: a footer line the figure's box overlaps, read again from the crop)."""
    key = _letters(line)
    if len(key) >= PAGE_KEY and key in page_letters:
        return True
    rows = [r for r in (_letters(x) for x in layer.splitlines()) if r]
    candidates = rows + [a + b for a, b in zip(rows, rows[1:], strict=False)]
    if any(key in c or SequenceMatcher(None, key, c).ratio() >= SIMILAR for c in candidates):
        return True
    words, known = _WORD.findall(line.casefold()), set(_WORD.findall(layer.casefold()))
    return bool(words) and sum(w in known for w in words) >= REPEAT * len(words)


def _new_lines(ocr: str, layer: str, page_letters: str) -> list[str]:
    """The lines of ``ocr`` that are text (:data:`MIN_LETTERS`) and not a repeat (:func:`repeats`)."""
    return [
        line
        for line in (ln.strip() for ln in ocr.splitlines())
        if len(_LETTER.findall(line)) >= MIN_LETTERS and not repeats(line, layer, page_letters)
    ]


def read_pictures(page: PageImage, blocks: list[Block], pt: PageText, recognizer: Recognizer) -> int:
    """Add the text only in the pictures of ``blocks`` (layer-filled figure blocks over a raster
    image; see the module docstring) to those blocks, each with a warning; returns the number of
    lines added. ``page`` is the rendered page the block boxes (pixels) refer to. Only for an
    in-process plain-text recognizer (``not remote and not structured``); others: 0, nothing read.
    Errors of the recognizer propagate as from any block read."""
    if recognizer.remote or recognizer.structured:
        return 0
    figures = [
        b for b in blocks if b.category is Category.FIGURE and b.text.strip() and is_pictured(b.bbox, pt)
    ]
    if not figures:
        return 0
    probes = [Block(bbox=b.bbox, category=Category.TEXT, source=SOURCE_OCR) for b in figures]
    recognizer.recognize_only(page, probes)
    drop_stray_han([*blocks, *probes], frozenset({SOURCE_OCR}))
    layer = "\n".join(b.text for b in blocks)  # the page's layer text: a figure's box may cross a footer
    page_letters = _letters("".join(c.text for c in pt.chars))
    added = 0
    for b, probe in zip(figures, probes, strict=True):
        lines = _new_lines(probe.text, layer, page_letters)
        if lines:
            b.text = "\n".join([b.text.rstrip(), *lines])
            b.warnings.append(
                f"{len(lines)} line(s) read from the picture by OCR (text the layer does not hold)"
            )
            added += len(lines)
    return added
