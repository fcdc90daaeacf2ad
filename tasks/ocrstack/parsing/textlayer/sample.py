"""The text layer's OCR sample (issue 11 item 1): a few layer runs read by the recognizer and
compared with the layer's own text, per font (a layer is faithful or not per font: its
ToUnicode map), so a long document is sampled on its first pages and where a new font appears.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Callable

from ocrstack.parsing.geometry import pad
from ocrstack.parsing.lines.assign import Line
from ocrstack.parsing.textlayer.extract import PageText
from ocrstack.parsing.textlayer.lines import build_lines, is_vertical
from ocrstack.parsing.textlayer.soundness import (
    SAMPLE_LINES,
    SAMPLE_MIN_AGREEMENT,
    SAMPLE_MIN_CHARS,
    Verdict,
    faithful,
    ocr_can_judge,
    sample_agreement,
    sample_length,
)
from ocrstack.parsing.types import BBox, PageImage

#: Characters per OCR sample run: a run ends at the first space after this many. Whole lines
#: (up to 1400 px wide at 200 DPI) cost the recognizer 1.1-1.35 s for three on the loaded
#: 2-core machine, as much as the rest of the text-layer page.
SAMPLE_RUN_CHARS = 16


class CheckedFonts:
    """Fonts whose layer text agreed with the OCR sample, per document (thread-safe, bounded).

    A text layer is faithful or not per font (its ToUnicode map), so once a sample line of a
    font agreed, later pages of the same document need not sample that font again: a
    300-page book is sampled on its first pages and where a new font appears. A font whose
    sample disagreed is not recorded, so every page using it is sampled (and judged) again.
    Documents are keyed by path, size and modification time; the :data:`MAX_DOCUMENTS`
    most recent are kept (a long-running service parses many).
    """

    MAX_DOCUMENTS = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs: OrderedDict[tuple, set[str]] = OrderedDict()

    @staticmethod
    def key(page: PageImage) -> tuple | None:
        """The document key of ``page`` (None when its file cannot be stat'ed)."""
        try:
            st = os.stat(page.source)
        except (OSError, TypeError):
            return None
        return (str(page.source), st.st_size, st.st_mtime_ns)

    def get(self, key: tuple | None) -> frozenset[str]:
        """Fonts checked so far in the document ``key``."""
        if key is None:
            return frozenset()
        with self._lock:
            return frozenset(self._docs.get(key, ()))

    def add(self, key: tuple | None, fonts: set[str]) -> None:
        """Record ``fonts`` as checked in document ``key``."""
        if key is None or not fonts:
            return
        with self._lock:
            self._docs.setdefault(key, set()).update(fonts)
            self._docs.move_to_end(key)
            while len(self._docs) > self.MAX_DOCUMENTS:
                self._docs.popitem(last=False)


def check_sample(
    pt: PageText,
    verdict: Verdict,
    read: Callable | None,
    image,  # PIL image
    accept_hidden: bool = False,
    checked: frozenset[str] = frozenset(),
) -> tuple[Verdict, set[str]]:
    """Compare a few layer lines with OCR of the same boxes (``read(crops) -> [text]``: the
    recognizer's :meth:`~ocrstack.parsing.engines.Recognizer.read_line_crops`).

    Only runs holding a font not in ``checked`` (fonts that agreed on an earlier page of the
    document, :class:`CheckedFonts`) are candidates; with none, the page is not sampled and
    the verdict says so (``sample_note``). Returns (``verdict`` with ``agreement`` set, made not
    sound when the median line agrees less than :data:`~.soundness.SAMPLE_MIN_AGREEMENT`; the
    fonts of the sample lines that agreed on their own). No ``read`` or a page already not
    sound: unchanged, no fonts.
    """
    if read is None or not verdict.sound:
        return verdict, set()
    fonts: list[frozenset[str]] = []
    runs = build_lines(pt.chars, faithful(pt, accept_hidden), max_chars=SAMPLE_RUN_CHARS, fonts_out=fonts)
    lines = [(ln, f) for ln, f in zip(runs, fonts, strict=True) if not is_vertical(ln) and not f <= checked]
    if not lines and runs:
        note = "not taken: every font on the page agreed with OCR on an earlier page of this document"
        return dataclasses.replace(verdict, sample_note=note), set()
    why = [ocr_can_judge(ln.text, f, pt.unembedded) for ln, f in lines]
    if lines and all(why):
        note = f"not taken: OCR cannot judge the layer's runs ({why[0]})"
        return dataclasses.replace(verdict, sample_note=note), set()
    lines = [x for x, w in zip(lines, why, strict=True) if w is None]
    lines = _pick(lines, checked)

    def read_boxes(boxes: list[BBox]) -> list[str] | None:
        return read([image.crop(tuple(round(v) for v in pad(b, 4, image.size))) for b in boxes])

    res = sample_agreement([(ln.bbox, ln.text) for ln, _ in lines], read_boxes)
    if res is None:
        return verdict, set()
    verdict = dataclasses.replace(verdict, agreement=res.agreement)
    if res.agreement < SAMPLE_MIN_AGREEMENT:
        verdict.sound = False
        verdict.reasons = [
            *verdict.reasons,
            f"the layer's words disagree with OCR of the page (median similarity {res.agreement:.2f} "
            f"on {res.lines} sample lines, at least {SAMPLE_MIN_AGREEMENT} needed)",
        ]
        return verdict, set()
    return verdict, {font for i in res.agreed for font in lines[i][1]}


Run = tuple[Line, frozenset[str]]


def _pick(lines: list[Run], checked: frozenset[str]) -> list[Run]:
    """Up to :data:`~.soundness.SAMPLE_LINES` sample runs: first one run for each unchecked font,
    the fonts with the most runs first (so one page checks as many fonts as it can), then runs
    spread over the page. Runs shorter than :data:`~.soundness.SAMPLE_MIN_CHARS` are not taken."""
    long = [x for x in lines if sample_length(x[0].text) >= SAMPLE_MIN_CHARS]
    runs_of: dict[str, list[int]] = {}
    for i, (_, fonts) in enumerate(long):
        for f in fonts - checked:
            runs_of.setdefault(f, []).append(i)
    picked: list[int] = []
    covered: set[str] = set()
    for f in sorted(runs_of, key=lambda f: -len(runs_of[f])):
        if f not in covered and len(picked) < SAMPLE_LINES:
            i = runs_of[f][len(runs_of[f]) // 2]
            picked.append(i)
            covered |= long[i][1]
    rest = [i for i in range(len(long)) if i not in picked]
    step = max(1, len(rest) // max(1, SAMPLE_LINES - len(picked)))
    picked += rest[::step][: SAMPLE_LINES - len(picked)]
    return [long[i] for i in sorted(picked)]
