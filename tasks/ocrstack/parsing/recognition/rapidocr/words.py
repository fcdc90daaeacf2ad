"""Words of an OCR line with their places, and a line cut at its wide gaps (issue 22 class 5).

rapidocr's detector boxes a table row's cells as one line when they are close ("3.32T 21.32T
2.95B", "178 $ 141 $ 138"), so a table built from line boxes merged its columns. The text layer
ends a line at a gap wider than :data:`~ocrstack.parsing.textlayer.lines.MAX_GAP` character
heights; OCR lines are cut the same way here. Where each word stands comes from the recognizer's
own CTC columns (rapidocr's ``return_word_box``, after PaddleOCR's ``cal_ocr_word_box``: a
character decoded at column ``c`` of ``n`` lies at ``c / n`` of the crop's width), so no other
model runs.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ocrstack.parsing.lines.assign import Line

#: A gap between two words wider than this many line heights ends a line (the text layer's
#: ``MAX_GAP``: word spaces are 0.25-0.6 of a line height, table gutters 2 and more).
MAX_GAP = 1.5
#: Lines turned more than this (degrees) are not cut: their crop's x is not the page's.
MAX_ANGLE = 2.0

Span = tuple[str, float, float]  # word, x0, x1 in crop pixels


class WordBoxes:
    """rapidocr's ``TextRecognizer`` with ``return_word_box`` on: :func:`reading.recognize` runs it
    like the recognizer itself (attributes pass through); :meth:`spans` gives each crop's words."""

    def __init__(self, rec: Any) -> None:
        self._rec = rec
        self._found: dict[int, tuple[Span, ...]] = {}
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rec, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._rec, name, value)

    def __call__(self, args: Any) -> Any:
        out = self._rec(dataclasses.replace(args, return_word_box=True))
        imgs = args.img if isinstance(args.img, list) else [args.img]
        for img, info in zip(imgs, out.word_results or (), strict=False):
            with self._lock:
                self._found[id(img)] = spans(info, img.shape[1])
        return out

    def spans(self, crops: list[np.ndarray]) -> list[tuple[Span, ...]]:
        """The words of each crop (in the order given) as :func:`spans` makes them."""
        return [self._found.get(id(c), ()) for c in crops]


def spans(info: Any, width: int) -> tuple[Span, ...]:
    """Words of one crop ``width`` pixels wide with their x extent, from rapidocr's ``WordInfo``
    (``words``: characters of each word, ``word_cols``: their CTC columns, ``line_txt_len``:
    the columns the crop spans); () without word information."""
    if info is None or not getattr(info, "words", None) or not getattr(info, "line_txt_len", 0):
        return ()
    cell = width / float(info.line_txt_len)
    out = []
    for chars, cols in zip(info.words, info.word_cols, strict=False):
        if chars and cols:
            # a character spans about the word's column pitch (CJK 3-4 columns, Latin 1-2)
            pitch = (cols[-1] - cols[0]) / (len(cols) - 1) if len(cols) > 1 else 2.0
            out.append(("".join(chars), cols[0] * cell, (cols[-1] + max(1.0, pitch)) * cell))
    return tuple(out)


def pieces(line: Line, words: tuple[Span, ...], crop_width: float) -> list[Line]:
    """``line`` cut at each gap between its ``words`` wider than :data:`MAX_GAP` line heights
    (boxes from the words' places; each piece's text is the line's own between the cuts). The
    line itself when it has no such gap, no word information, is turned or vertical, or a cut
    next to CJK text falls where its text has no space (:func:`_cut`)."""
    if len(words) < 2 or crop_width <= 0 or line.vertical or line.flipped or abs(line.angle) > MAX_ANGLE:
        return [line]
    x0, y0, x1, y1 = line.bbox
    scale, lh = (x1 - x0) / crop_width, y1 - y0
    groups: list[list[Span]] = [[words[0]]]
    for w in words[1:]:
        if (w[1] - groups[-1][-1][2]) * scale > MAX_GAP * lh:
            groups.append([w])
        else:
            groups[-1].append(w)
    texts = _cut(line.text, [sum(len(w[0]) for w in g) for g in groups])
    if len(groups) < 2 or texts is None:
        return [line]
    return [
        dataclasses.replace(line, bbox=(x0 + g[0][1] * scale, y0, min(x1, x0 + g[-1][2] * scale), y1), text=t)
        for g, t in zip(groups, texts, strict=True)
    ]


def _wide(ch: str) -> bool:
    """A CJK ideograph, kana, hangul or full-width form (the recognizer's CN word type)."""
    return "\u2e80" <= ch <= "\ud7af" or "\uf900" <= ch <= "\uffef"


def _cut(text: str, counts: list[int]) -> list[str] | None:
    """``text`` cut into runs of ``counts`` non-space characters each (spaces between runs
    dropped, spaces inside kept); None when the counts do not add up to the text's, or a cut
    next to a CJK character falls where the text has no space (a CJK run's end is placed
    roughly: the recognizer read no gap there; Latin words far apart may come without one)."""
    out, k = [], 0
    for n in counts:
        start = k
        while n and k < len(text):
            n -= not text[k].isspace()
            k += 1
        if n or (k < len(text) and not text[k].isspace() and (_wide(text[k - 1]) or _wide(text[k]))):
            return None
        out.append(text[start:k].strip())
    return out if not text[k:].strip() else None
