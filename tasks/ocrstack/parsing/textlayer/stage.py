"""The text-layer stage of ``ocrstack parse`` (issue 11 items 1 and 5).

Per page, for ``--text-layer auto`` (default) or ``on``:

1. :func:`read_page` extracts the layer and judges it (:mod:`.soundness`); ``auto`` also
   compares a quick OCR sample of a few layer lines with the layer (:func:`check_sample`), only
   lines in fonts not yet checked on an earlier page of the document (:class:`CheckedFonts`).
2. On a sound page :func:`fill_blocks` routes every layout block: it takes the layer's text
   (source ``text-layer``), or goes to recognition (source ``ocr`` / ``server``) when it has
   no layer characters (outlined text, a picture), is a figure over a raster image without
   layer text, is a formula on a math page (a page with unfaithful characters: TeX math
   fonts) and the recognizer returns LaTeX, or (not for formulas) more than
   :data:`BLOCK_BAD_LIMIT` of its characters are unfaithful. Table blocks become
   ``<table>`` HTML (:mod:`ocrstack.parsing.tables.born_digital`).
3. :func:`recognise_rest` reads the routed blocks with the recognizer's ``recognize_only``:
   rapidocr reads each block's crop (a whole-page read would cost as much as the OCR path), a
   cropping recognizer (openai) gets the blocks as usual.

``off`` (and raster inputs) keep the OCR path for every block. Block sources are set on
``Block.source``; the verdict goes to the page's ``text_layer`` entry in blocks.json.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from ocrstack.parsing.engines import Recognizer
from ocrstack.parsing.geometry import covered, intersection, pad
from ocrstack.parsing.recognition.lines import Line, assign_lines
from ocrstack.parsing.tables.born_digital import has_ruled_grid, table_html
from ocrstack.parsing.textlayer.extract import Char, PageText, page_text
from ocrstack.parsing.textlayer.lines import build_lines
from ocrstack.parsing.textlayer.soundness import (
    MIN_CHARS,
    SAMPLE_LINES,
    SAMPLE_MIN_AGREEMENT,
    SAMPLE_MIN_CHARS,
    Verdict,
    bad_reason,
    hidden_reason,
    is_text,
    judge,
    sample_agreement,
)
from ocrstack.parsing.types import BBox, Block, Category, PageImage

MODES = ("auto", "on", "off")
SOURCE_LAYER, SOURCE_OCR, SOURCE_SERVER = "text-layer", "ocr", "server"
#: Unfaithful share of a block's characters above which the block is read by OCR. Below it the
#: unfaithful characters are left out (a block's warning counts them): OCR of a text block
#: with some inline math lost more words than the few glyphs left out (math_mathtools_doc
#: page 1: two blocks with 2 of 16 unfaithful characters; math_zh_gaokao_exam page 1: 44 of
#: 48 unfaithful is math the layer cannot give).
BLOCK_BAD_LIMIT = 0.25
#: Characters per OCR sample run: a run ends at the first space after this many. Whole lines
#: (up to 1400 px wide at 200 DPI) cost the recognizer 1.1-1.35 s for three on the loaded
#: 2-core machine, as much as the rest of the text-layer page.
SAMPLE_RUN_CHARS = 16
#: Share of the page above which a table block without a ruled grid is taken for text: the
#: corpus tables cover 3-26% of their pages; the layout model labelled all of the 3-column
#: en_multicol_pari_refcard a table (row-wise cells across the columns: order 0.30).
BIG_TABLE = 0.5
#: Share of a block an image object must cover for the block to count as a picture.
IMAGE_COVER = 0.3


def read_page(page: PageImage, mode: str, password: str | None = None) -> tuple[PageText | None, Verdict]:
    """Extract and judge the text layer of ``page``; ``mode`` is ``auto``, ``on`` or ``off``.

    ``on`` accepts an invisible OCR layer over a scan and uses a layer whatever the
    character checks say (the reasons are kept, prefixed "used anyway"), as long as it has
    at least :data:`~.soundness.MIN_CHARS` characters. Never raises for a broken layer:
    an unreadable one is "not sound" with the error as the reason.
    """
    if mode == "off":
        return None, Verdict(False, ["--text-layer off"])
    if page.dpi is None:
        return None, Verdict(False, ["raster input: no text layer"])
    try:
        pt = page_text(page.source, page.index, page.size, password)
    except Exception as exc:  # noqa: BLE001 - PDFium rendered the page: its text is optional
        return None, Verdict(False, [f"text layer unreadable ({type(exc).__name__}: {exc})"])
    verdict = judge(pt, accept_ocr_layer=mode == "on")
    chars = verdict.counts.get("visible", 0) + verdict.counts.get("hidden", 0)
    if mode == "on" and not verdict.sound and chars >= MIN_CHARS:
        verdict = Verdict(
            True, [f"used anyway (--text-layer on): {r}" for r in verdict.reasons], verdict.counts
        )
    return pt, verdict


def usable(pt: PageText, accept_hidden: bool = False) -> Callable[[Char], bool]:
    """Predicate: a character the layer path may use (visible, or any with ``accept_hidden``).
    Decided once per character of ``pt`` (the predicate is a set lookup)."""
    if accept_hidden:
        return lambda c: True
    keep = {id(c) for c in pt.chars if hidden_reason(c, pt.size, pt.images) is None}
    return lambda c: id(c) in keep


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
    image,  # noqa: ANN001 - PIL image
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
    ok = usable(pt, accept_hidden)
    fonts: list[frozenset[str]] = []
    runs = build_lines(
        pt.chars, lambda c: ok(c) and bad_reason(c) is None, max_chars=SAMPLE_RUN_CHARS, fonts_out=fonts
    )
    lines = [(ln, f) for ln, f in zip(runs, fonts, strict=True) if not _tall(ln) and not f <= checked]
    if not lines and runs:
        note = "not taken: every font on the page agreed with OCR on an earlier page of this document"
        return dataclasses.replace(verdict, sample_note=note), set()
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
    long = [x for x in lines if len("".join(x[0].text.split())) >= SAMPLE_MIN_CHARS]
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


def printable(c: Char) -> bool:
    """The character can stand in text: faithful, or an ASCII character PDFium read from the
    font's own encoding after a ToUnicode map error (TeX math fonts: the primes and letters of
    math_crc_paper; the non-ASCII guesses, Hangul and IPA letters on math_zh_gaokao_exam, are junk)."""
    reason = bad_reason(c)
    return reason is None or (reason == "unmapped" and len(c.text) == 1 and "!" <= c.text <= "~")


def _tall(ln: Line) -> bool:
    return ln.bbox[3] - ln.bbox[1] > ln.bbox[2] - ln.bbox[0]


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
    pictured = any(intersection(b.bbox, img) >= IMAGE_COVER * max(1.0, _area(b.bbox)) for img, _ in pt.images)
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
    lines = [
        ln
        for ln in build_lines(pt.chars, lambda c: ok(c) and printable(c))
        if not any(covered(ln.bbox, r.bbox) >= 0.5 for r in rest)
    ]
    filled = assign_lines(layer_blocks, lines, structured=True)
    for b in filled:
        b.source = SOURCE_LAYER
        if b.category is Category.TABLE:
            good = [c for c in visible if printable(c)]
            html = table_html(good, b.bbox, page.source, page.index, px_per_pt, password, pt.rotation)
            if html is not None:
                b.text = html
    return filled, rest


def recognise_rest(page: PageImage, blocks: list[Block], recognizer: Recognizer) -> list[Block]:
    """Recognise the routed ``blocks`` with :meth:`~ocrstack.parsing.engines.Recognizer.recognize_only`
    (rapidocr: each block's crop; a cropping recognizer: as usual); sets each block's ``source``
    (``server`` for a remote recognizer, else ``ocr``). Returns ``blocks``."""
    if not blocks:
        return []
    out = recognizer.recognize_only(page, blocks)
    for b in out:
        b.source = SOURCE_SERVER if recognizer.remote else SOURCE_OCR
    return out
