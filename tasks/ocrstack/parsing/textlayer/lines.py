"""Text-layer characters -> text lines in page pixels, ready for the OCR path's block assignment.

A line is a run of characters in content-stream order that stays on one baseline: the next
character overlaps the run's last one by at least :data:`SAME_LINE_OVERLAP` of the smaller
height (or width, for text set top-to-bottom) and is at most :data:`MAX_GAP` character heights
away from it. PDFium's generated line breaks also end a line; its generated spaces become
one space. The lines are :class:`ocrstack.parsing.lines.assign.Line` objects (score 1.0)
so that :func:`ocrstack.parsing.lines.assign.assign_lines` gives them to layout
blocks and orders them with the same reading-order code as OCR lines.

Characters a caller marks unusable (hidden, or unfaithful in a block read from the layer)
are skipped; a line-end hyphen (PDFium's U+FFFE) is written as "-".

Accents set as glyphs of their own over a letter (TeX's ``\\'a``, ``\\v c``: PDFium gives
``Min ´ a´c ˇ`` for "Mináč", issue 22 class 3) are composed with the letter they overlap
(:data:`ACCENTS`), and each letter with its combining marks is NFC-composed (:func:`compose`), so
the text reads as the page shows it. Two typographic single quotes set as a pair (``‘‘``, ``’’``:
fonts and typesetters without the double-quote glyph) are the double quote the page shows
(:func:`quote_pairs`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

from ocrstack.parsing.geometry import union
from ocrstack.parsing.lines.assign import Line
from ocrstack.parsing.textlayer.extract import Char
from ocrstack.parsing.types import BBox

#: Least overlap (fraction of the smaller character's height) of two characters on one line.
SAME_LINE_OVERLAP = 0.5
#: A line's first character at least this many times the median height of the others is a
#: drop cap (:func:`_line_box`): the olmOCR sample's "O" of "Over the past" is 4.7x.
DROP_CAP = 2.0
#: Largest gap between neighbouring characters of one line, in character heights. Justified
#: TeX text stretches inter-word spaces to about 0.6 em; table columns and the gutter between
#: text columns are wider (2 em and more on the corpus pages), so they split lines.
MAX_GAP = 1.5


# fmt: off
#: Spacing accents -> the combining mark they stand for over a letter (Unicode's decompositions
#: of the spacing forms: U+00B4 ACUTE ACCENT is <compat> U+0020 U+0301, and so on).
ACCENTS = {
    "\u00b4": "\u0301", "`": "\u0300", "\u02c6": "\u0302", "\u02dc": "\u0303", "\u00a8": "\u0308",
    "\u02c7": "\u030c", "\u02d8": "\u0306", "\u02d9": "\u0307", "\u02da": "\u030a", "\u02dd": "\u030b",
    "\u00b8": "\u0327", "\u02db": "\u0328", "\u00af": "\u0304",
}
# fmt: on
#: Least horizontal overlap (fraction of the accent's width) of an accent glyph with the letter it
#: is set over.
ACCENT_OVERLAP = 0.5
#: Gap before an accented letter (fraction of its height) that is a word space, not the kern
#: that set the accent over it.
WORD_GAP = 0.15


def _mark(ch: str) -> str | None:
    """The combining mark ``ch`` stands for when set over a letter (a spacing accent of
    :data:`ACCENTS`, or a mark of the Combining Diacritical Marks block, U+0300-U+036F; the marks
    for symbols, such as the vector arrow U+20D7, stay where the layer puts them), or None."""
    if len(ch) == 1 and "\u0300" <= ch <= "\u036f":
        return ch
    return ACCENTS.get(ch)


def compose(text: str) -> str:
    """``text`` with each letter and the combining marks after it NFC-composed; characters
    without marks are kept as they are (NFC would also replace singletons such as U+2329
    LEFT-POINTING ANGLE BRACKET by U+3008)."""
    if not any("\u0300" <= ch <= "\u036f" for ch in text):
        return text
    return _CLUSTER.sub(lambda m: unicodedata.normalize("NFC", m.group(0)), text)


_CLUSTER = re.compile("[^\u0300-\u036f][\u0300-\u036f]+")

#: A pair of typographic single quotes -> the double quote it draws (issue 22 class 3: the
#: olmOCR sample's ``‘‘corporate social responsibility’’``). Only the curly forms: a pair of
#: ASCII apostrophes is also a double prime (``f''(x)``) and is left alone.
QUOTE_PAIRS = {"\u2018\u2018": "\u201c", "\u2019\u2019": "\u201d"}


def quote_pairs(text: str) -> str:
    """``text`` with each ``‘‘`` written ``“`` and each ``’’`` written ``”`` (:data:`QUOTE_PAIRS`)."""
    for pair, quote in QUOTE_PAIRS.items():
        text = text.replace(pair, quote)
    return text


def _over(accent: BBox, letter: BBox) -> bool:
    w = accent[2] - accent[0]
    h = min(accent[3] - accent[1], letter[3] - letter[1])
    return (
        w > 0
        and _ov(accent[0], accent[2], letter[0], letter[2]) >= ACCENT_OVERLAP * w
        and _ov(accent[1], accent[3], letter[1], letter[3]) > 0.3 * h
    )


def _under(accent: BBox, boxes: list[BBox], text: list[str], at: list[int]) -> int | None:
    """Index of the letter of the line so far that ``accent`` is set over, the latest first, or
    None (``text[at[k]]`` is the character of ``boxes[k]``). PDFium may give the accent words
    after its letter: ``Jan Min ´`` for the first accent of "Ján Mináč"."""
    latest_first = range(len(boxes) - 1, -1, -1)
    return next((k for k in latest_first if text[at[k]][:1].isalpha() and _over(accent, boxes[k])), None)


def _cjk(ch: str) -> bool:
    return len(ch) == 1 and ("\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")


def _ov(a0: float, a1: float, b0: float, b1: float) -> float:
    return min(a1, b1) - max(a0, b0)


def _same_line(prev: BBox, c: BBox) -> bool:
    # once per character of a page: min/max of two written out (``b if b < a else a`` is
    # ``min(a, b)``, ``b if b > a else a`` is ``max(a, b)``), a third of the time of the calls
    p0, p1, p2, p3 = prev
    c0, c1, c2, c3 = c
    ph, ch = p3 - p1, c3 - c1
    h = ch if ch < ph else ph
    if h > 0 and (c3 if c3 < p3 else p3) - (c1 if c1 > p1 else p1) >= SAME_LINE_OVERLAP * h:  # left-right
        g0, g1 = c0 - p2, p0 - c2
        return (g1 if g1 > g0 else g0) <= MAX_GAP * (ch if ch > ph else ph)
    pw, cw = p2 - p0, c2 - c0
    w = cw if cw < pw else pw
    if w > 0 and (c2 if c2 < p2 else p2) - (c0 if c0 > p0 else p0) >= SAME_LINE_OVERLAP * w:  # top-bottom
        g0, g1 = c1 - p3, p1 - c3
        return (g1 if g1 > g0 else g0) <= MAX_GAP * (cw if cw > pw else pw)
    return False


def build_lines(
    chars: Sequence[Char],
    usable: Callable[[Char], bool] = lambda c: True,
    max_chars: int | None = None,
    fonts_out: list[frozenset[str]] | None = None,
) -> list[Line]:
    """Group ``chars`` (content-stream order) into lines; see the module docstring.

    Returns lines in stream order, each with ``bbox`` the union of its characters' boxes in
    page pixels, ``text`` stripped, ``score`` 1.0, and ``vertical`` / ``flipped`` giving the
    :attr:`Char.direction` of most of its characters (a tie: 0 if 0 is among the tied, else the
    first of them in stream order): the mirrored E of the XeTeX
    logo is a glyph turned 180 degrees inside an upright line (en_twocol_ltnews24). Lines
    with no text are dropped.
    ``max_chars``: also end a line at the first space (or CJK character) after this many
    characters (short runs for the OCR sample: the recognizer's cost grows with the crop's width).
    ``fonts_out``: gets, per returned line, the fonts (:attr:`Char.font`) of its characters.
    """
    lines: list[Line] = []
    text: list[str] = []
    boxes: list[BBox] = []
    fonts: set[str] = set()
    space = False
    turns: dict[int, int] = {}  # Char.direction -> characters of the line
    pending: tuple[str, Char] | None = None  # an accent glyph not over a letter before it
    glued = False  # an accent was just put over an earlier letter
    at: list[int] = []  # index in ``text`` of each box's character

    def add(ch: str, bbox: BBox) -> None:
        at.append(len(text))
        text.append(ch)
        boxes.append(bbox)

    def flush() -> None:
        nonlocal text, boxes, space, fonts, turns, pending, at, glued
        if pending is not None:
            add(pending[1].text, pending[1].bbox)
            pending = None
        t = quote_pairs(compose("".join(text).strip()))
        turn = max(turns, key=lambda d: (turns[d], d == 0)) if turns else 0
        if t and boxes:
            # the direction as the OCR path records it (lines.rotated.direction)
            vertical, flipped = turn in (90, 270), turn in (180, 270)
            lines.append(Line(bbox=_line_box(boxes), text=t, score=1.0, vertical=vertical, flipped=flipped))
            if fonts_out is not None:
                fonts_out.append(frozenset(fonts))
        text, boxes, space, fonts, turns, at = [], [], False, set(), {}, []
        glued = False

    for c in chars:
        if max_chars is not None and len(text) >= max_chars and (c.text.isspace() or _cjk(c.text)):
            flush()  # Chinese has no spaces: any character boundary ends a run
            if c.text.isspace():
                continue
        if c.generated:
            if c.text in ("\r", "\n"):
                flush()
            elif c.text.isspace():
                space = True
            continue
        if c.text in ("\r", "\n"):
            flush()
            continue
        if c.text.isspace() or c.text == "":
            if c.text:
                space = True
            continue
        if not usable(c):
            continue
        mark = _mark(c.text)
        under = _under(c.bbox, boxes, text, at) if mark else None
        if mark and under is not None:
            text[at[under]] += mark  # over a letter before it (PDFium may give it words later)
            glued = True  # PDFium's spaces around a displaced accent are not word spaces
            continue
        last = pending[1].bbox if pending is not None else (boxes[-1] if boxes else None)
        if last is not None and not _same_line(last, c.bbox):
            flush()
        if mark and pending is None:
            pending = (mark, c)  # maybe over the next letter
            continue
        if pending is not None:
            if c.text[:1].isalpha() and _over(pending[1].bbox, c.bbox):
                if space and boxes and c.bbox[0] - boxes[-1][2] > WORD_GAP * (c.bbox[3] - c.bbox[1]):
                    text.append(" ")  # a word starts with the accented letter
                add(c.text + pending[0], c.bbox)
                fonts.add(c.font)
                pending, space = None, False
                continue
            add(pending[1].text, pending[1].bbox)
            pending = None
        if glued and boxes and c.bbox[0] - boxes[-1][2] <= WORD_GAP * (c.bbox[3] - c.bbox[1]):
            space = False
        if space and text:
            text.append(" ")
        space = glued = False
        turns[c.direction] = turns.get(c.direction, 0) + 1
        add("-" if c.hyphen or c.text == "\ufffe" else c.text, c.bbox)
        fonts.add(c.font)
    flush()
    return lines


def _line_box(boxes: list[BBox]) -> BBox:
    """The union of a line's character boxes, less the height of a drop cap: a first letter
    at least :data:`DROP_CAP` times the median height of the others spans the lines below it
    too, and a line box that tall was read after them (issue 22 class 7)."""
    box = union(boxes)
    if len(boxes) > 2:
        heights = sorted(b[3] - b[1] for b in boxes[1:])
        if boxes[0][3] - boxes[0][1] >= DROP_CAP * heights[len(heights) // 2]:
            rest = union(boxes[1:])
            box = (box[0], rest[1], rest[2], rest[3])
    return box


def is_vertical(ln: Line) -> bool:
    """The line's box is taller than wide (text set top to bottom)."""
    return ln.bbox[3] - ln.bbox[1] > ln.bbox[2] - ln.bbox[0]
