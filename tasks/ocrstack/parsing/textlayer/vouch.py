"""A text layer judged without OCR: words that read as language, ink where the layer puts them (issue 21).

The OCR sample (:mod:`.sample`) loads the recognizer, ONNX Runtime and its models (150 MB and a
second of start-up) only to confirm what the layer's own text can often show: a font whose
ToUnicode map is wrong gives letters that form no words (``Uijt epdvnfou``, every letter the next
one: tests/parsing/test_textlayer_broken.py), a right one gives the common words of its language.
:func:`vouch` decides per font, and for the page:

* a font *reads as language* when its text holds at least :data:`MIN_WORDS` words of two letters
  or more of which at least :data:`MIN_COMMON` are among :data:`COMMON_WORDS` (function words of
  English, French, German, Spanish, Italian, Portuguese and Dutch), or at least :data:`MIN_CJK`
  Han and kana characters of which at least :data:`MIN_COMMON_CJK` are among :data:`COMMON_CJK`.
  Measured on the dev corpus (every font with enough text): body fonts 0.28-0.50 of their words
  common, Chinese body fonts 0.23-0.40 of their characters; the same pages with every letter
  shifted by 1, 3 or 13 places 0.00-0.05. Code, identifiers and math variables do not read as
  language (0.00-0.08), so those fonts are not vouched for;
* the page needs no sample when the fonts that read as language (on this page, or earlier in the
  document: the ``checked`` fonts) hold at least :data:`PAGE_SHARE` of its words (a Han or kana
  character counts as a word), as the OCR sample's median of three lines is decided by the
  majority, and every line holding at least :data:`INK_SHARE` of the page's characters shows ink
  like text where the layer puts it: between :data:`MIN_DARK` and :data:`MAX_DARK` of its box
  darker than :data:`DARK` (measured 0.02-0.34 on every dev-corpus line at 200 DPI). Text
  painted over by a white or black shape (a path, which the hidden-character rule does not see),
  white text and clipped text fail it.

A page that does not pass goes to the OCR sample as before, with the fonts that read as language
already counted as checked. What this accepts that the sample might not: a font holding a small
share of the page whose map is wrong on its own (the sample, too, reads only three runs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from ocrstack.parsing.lines.assign import Line
from ocrstack.parsing.textlayer.extract import Char

#: Function words (articles, pronouns, prepositions, conjunctions, auxiliaries) of two letters or
#: more of English, French, German, Spanish, Italian, Portuguese and Dutch, lower case.
COMMON_WORDS = frozenset(
    """
    the of and to in is it that for as with was on be by at this are from or an which not but have
    has can if we you they he she his her its their our will would all one there been more these
    other into than also may no so such when only each then them used use any some what who how do
    does were should must see about between both most over under after before out up new first two
    le la les de des du un une et en est que qui dans pour par sur pas au aux ce cette il elle ne se
    sont avec plus ou son sa ses
    der die das und zu den von mit ist des sich nicht auf ein eine dem für im es auch als an werden
    aus er sie wird bei oder nach sind
    el los las del por con para al lo como más su sus
    di che per della non sono si da
    do da em um não uma os na mais dos
    het een van dat op te zijn met voor niet aan
    """.split()
)
#: Han characters at the head of the frequency lists of written Chinese (simplified, and the
#: traditional forms of those that differ) and the commonest Japanese kana particles.
COMMON_CJK = frozenset(
    "的一是不了在人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后"
    "作里用道行所然家种事成方多经么去法学如都同现当没动面起看定天分还进好小部其些主样理心"
    "這個們來為國說時會對發後裡經麼現當沒動還進"
    "のにはをがでとたしてるい"
)
MIN_WORDS = 20
MIN_COMMON = 0.15
MIN_CJK = 40
MIN_COMMON_CJK = 0.12
PAGE_SHARE = 2 / 3
#: Grey level (0 black .. 255 white) under which a pixel is ink, and the share of a line's box
#: that must be ink for it to look like text.
DARK = 128
MIN_DARK = 0.01
MAX_DARK = 0.6
INK_SHARE = 0.98

_WORD = re.compile(r"[^\W\d_]{2,}")


#: Han and kana: Hiragana and Katakana (U+3040-30FF), Katakana Phonetic Extensions, CJK Unified
#: Ideographs Extension A, the main block, and Extensions B-H (Unicode 15.1).
_CJK = re.compile("[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U000323af]")


@dataclass
class FontText:
    """One font's words on a page: ``words`` (two letters or more, or one Han/kana character),
    ``latin`` / ``common`` (words in letters, those in :data:`COMMON_WORDS`), ``cjk`` /
    ``common_cjk`` (Han and kana characters, those in :data:`COMMON_CJK`)."""

    words: int = 0
    latin: int = 0
    common: int = 0
    cjk: int = 0
    common_cjk: int = 0

    def reads_as_language(self) -> bool:
        """See the module docstring."""
        if self.latin >= MIN_WORDS and self.common >= MIN_COMMON * self.latin:
            return True
        return self.cjk >= MIN_CJK and self.common_cjk >= MIN_COMMON_CJK * self.cjk


def font_texts(chars: Sequence[Char], usable) -> dict[str, FontText]:
    """:class:`FontText` of every font of ``chars`` (content-stream order) whose characters
    ``usable(char)`` accepts; a word ends at a space, a line break or a change of font."""
    out: dict[str, FontText] = {}
    runs: dict[str, list[str]] = {}
    last: list[str] | None = None  # the run the previous character went to
    for c in chars:
        if c.generated or not c.text or c.text.isspace() or not usable(c):
            if last is not None:
                last.append(" ")
            last = None
            continue
        run = runs.setdefault(c.font, [])
        if last is not None and last is not run:
            last.append(" ")  # a change of font ends the word in the font before
        run.append(c.text)
        last = run
    for font, run in runs.items():
        ft = out[font] = FontText()
        text = "".join(run)
        words = [w.lower() for w in _WORD.findall(text)]
        cjk = _CJK.findall(text)
        ft.latin = sum(1 for w in words if not _CJK.search(w))
        ft.common = sum(1 for w in words if w in COMMON_WORDS)
        ft.cjk, ft.common_cjk = len(cjk), sum(1 for ch in cjk if ch in COMMON_CJK)
        ft.words = ft.latin + ft.cjk
    return out


def inked_share(lines: Sequence[Line], grey: Image.Image) -> float:
    """Share of the characters of ``lines`` in lines whose box looks like printed text on the
    grey page ``grey`` (a PIL ``L`` image in the boxes' pixels); 1.0 for no lines. Each box is
    measured on its own crop (no copy of the page)."""
    w, h = grey.size
    total = inked = 0
    for ln in lines:
        n = len(ln.text)
        total += n
        x0, y0, x1, y1 = (round(v) for v in ln.bbox)
        box = (max(0, x0), max(0, y0), min(w, x1), min(h, y1))
        size = (box[2] - box[0]) * (box[3] - box[1])
        if box[2] > box[0] and box[3] > box[1]:
            dark = sum(grey.crop(box).histogram()[:DARK])
            if MIN_DARK <= dark / size <= MAX_DARK:
                inked += n
    return inked / total if total else 1.0


@dataclass
class Vouched:
    """What :func:`vouch` found: ``fonts`` that read as language on this page; ``note`` (for the
    verdict's ``sample_note``) when the page needs no OCR sample, else None."""

    fonts: set[str]
    note: str | None


def vouch(
    chars: Sequence[Char],
    usable,
    lines: Sequence[Line],
    grey: Image.Image,
    checked: frozenset[str] = frozenset(),
) -> Vouched:
    """Judge a sound page's layer without OCR (see module docstring).

    ``chars``: the page's characters; ``usable(char)``: the visible, faithful ones; ``lines``:
    the page's layer lines (page pixels of ``grey``, the page in grey, mode ``L``); ``checked``:
    fonts that agreed with OCR or read as language earlier in the document.
    """
    texts = font_texts(chars, usable)
    fonts = {f for f, t in texts.items() if f not in checked and t.reads_as_language()}
    total = sum(t.words for t in texts.values())
    known = sum(t.words for f, t in texts.items() if f in fonts or f in checked)
    if not total or known < PAGE_SHARE * total:
        return Vouched(fonts, None)
    ink = inked_share(lines, grey)
    if ink < INK_SHARE:
        return Vouched(fonts, None)
    return Vouched(
        fonts,
        f"not taken: {known} of the page's {total} words are in fonts whose text reads as language "
        f"and {ink:.0%} of its text shows ink where the layer puts it",
    )
