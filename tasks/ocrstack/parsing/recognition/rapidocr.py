"""Embedded CPU recognizer: the PP-OCR ONNX models shipped inside the ``rapidocr`` wheel, offline.

Design (issue 3, measured on the corpus):

* The whole page is read ONCE (text detection + recognition, rapidocr's per-line
  orientation classifier off), then the lines are assigned to layout blocks by overlap.
  Recognising only layout crops lost text outside every block, cut glyphs and read
  regions twice, at 2-4x the time; whole-page lines avoid all three.
* Orientation is decided per line by recognition score, not by the classifier alone:
  the classifier (ch_ppocr_mobile_v2.0_cls) proposes 180 degrees, the line is
  recognised both ways and the reading with the higher score wins. This keeps the
  upright lines the classifier flips on zh_ctex_manual page 2 and still reads the
  upside-down boxes of odd_rotated_text_boxes.pdf.
* Per page: when most recognised text runs vertically the page is turned 90 or 270
  degrees; when most lines read better upside down it is turned 180 degrees, and read
  again (:meth:`RapidOcrRecognizer.orient`).
* Lines no block covers become ``recovered`` text blocks; tables and formulas keep their
  OCR text with a warning (rapidocr produces no table structure or LaTeX).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import numpy as np
from PIL import Image

from ocrstack.core.errors import ConfigError
from ocrstack.parsing.engines import Recognizer
from ocrstack.parsing.geometry import area, covered, union
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.reading_order import order_lines
from ocrstack.parsing.types import BBox, Block, Category, PageImage

#: rapidocr's own default ``Global.text_score`` (rapidocr/config.yaml): lines below are dropped.
MIN_SCORE = 0.5
#: rapidocr/utils/process_img.py get_rotate_crop_image turns crops with h/w >= 1.5 by 90 degrees.
VERTICAL_RATIO = 1.5
#: Minimum characters for a line to vote on page orientation (single glyphs are often tall).
VOTE_MIN_CHARS = 3
#: Deskew (see RapidOcrRecognizer.page_skew): a page is turned level when its long lines
#: slope between MIN_SKEW and MAX_SKEW degrees. 0.5 degrees shifts the end of a 1300 px
#: column line by 11 px, a third of a line height at 200 DPI; above 10 degrees the tilt is
#: not a scanning skew and is left alone.
MIN_SKEW = 0.5
MAX_SKEW = 10.0
SKEW_MIN_CHARS = 10
SKEW_MIN_LINES = 5
#: A line whose box holds at least this fraction of a block, and is at most this many times
#: the block's area, belongs to that block even though the block covers less than half of
#: it: rapid-layout boxes page numbers tightly around the glyphs, rapidocr pads its line box
#: (measured 2.3-3.1x the area on en_single_libtasn1_intro and zh_ctex_manual, where the page
#: number was recovered as body text and the page-number block reported empty).
CONTAINED_BLOCK = 0.8
CONTAINED_AREA_RATIO = 4.0
#: Blocks whose lines are read row by row (ocrstack.parsing.reading_order.order_table_lines) rather
#: than column by column: tables, and figures, whose text is labels or a table the layout
#: model took for a picture (tables_zh_debian_reference: "Table 1.24" is labelled figure;
#: read column-wise it gave "stdin stdout stderr" before their descriptions).
ROW_ORDER = (Category.TABLE, Category.FIGURE)
#: A header block whose lines are this many times the page's median line height is a title
#: (see :func:`promote_title_headers`).
TITLE_HEIGHT_RATIO = 1.5

FALLBACK_WARNING = {
    Category.TABLE: "table read as plain OCR text: rapidocr recognises no table structure "
    "(use --recognizer openai with an OTSL-capable model for HTML tables)",
    Category.FORMULA: "formula read as plain OCR text: rapidocr produces no LaTeX "
    "(use --recognizer openai for $$...$$ formulas)",
}


@dataclass
class Line:
    """One recognised text line: axis-aligned ``bbox`` in page pixels, ``text``, ``score`` 0..1.

    ``vertical``: the detected box was taller than wide (text runs top-bottom);
    ``flipped``: the 180-degree reading scored higher than the upright one.
    """

    bbox: BBox
    text: str
    score: float
    vertical: bool = False
    flipped: bool = False
    #: slope of the detected box's top edge, degrees, image coordinates (y down): positive =
    #: the line descends to the right
    angle: float = 0.0


#: rapidocr's logger (rapidocr/utils/log.py: ``Logger(logger_name="RapidOCR")``, own stderr
#: handler, ``propagate = False``).
RAPIDOCR_LOGGER = "RapidOCR"
log = logging.getLogger("ocrstack.rapidocr")


class _Demote(logging.Filter):
    """Re-log rapidocr records below ERROR on ``ocrstack.rapidocr`` at DEBUG and drop them.

    rapidocr logs expected conditions as WARNING on its own stderr handler (e.g. "The text
    detection result is empty" for a blank page, which ocrstack reports itself as an empty
    page), and those lines broke the CLI's output. ERROR and above pass unchanged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        log.debug("rapidocr %s: %s", record.levelname.lower(), record.getMessage())
        return False


def quiet_rapidocr_warnings() -> None:
    """Install :class:`_Demote` on rapidocr's logger (once)."""
    logger = logging.getLogger(RAPIDOCR_LOGGER)
    if not any(isinstance(f, _Demote) for f in logger.filters):
        logger.addFilter(_Demote())


def _bundled_model_dir() -> Path:
    import rapidocr

    return Path(rapidocr.__file__).resolve().parent / "models"


class RapidOcrRecognizer(Recognizer):
    """:class:`~ocrstack.parsing.types.Recognizer` over rapidocr; safe for one page at a time per instance."""

    name = "rapidocr"
    #: rapidocr returns plain text only: no OTSL tables, no LaTeX formulas.
    structured = False
    #: reads the whole page and assigns lines to blocks (no crops, so no crop padding).
    reads_whole_page = True

    def __init__(self, min_score: float = MIN_SCORE, memo: dict | None = None) -> None:
        """``memo``: optional dict shared between instances that remembers each page's
        orientation and lines by (input sha256, page index, DPI, size), so the same page is
        read once per process (tests compare layouts on the same OCR)."""
        self.min_score = min_score
        self._engine = None
        self._lock = threading.Lock()
        self._lines: dict[int, list[Line]] = {}
        self.memo = memo

    def model_info(self) -> dict[str, str]:
        """Names of the ONNX files used (for blocks.json), from the bundled model directory."""
        return {"models": ", ".join(sorted(p.name for p in _bundled_model_dir().glob("*.onnx")))}

    def engine(self):  # noqa: ANN201 - rapidocr.RapidOCR, imported lazily
        """Return the (lazily built) ``rapidocr.RapidOCR`` engine using only the wheel's bundled models.

        Raises:
            ConfigError: rapidocr is not installed or its bundled models are missing.
        """
        if self._engine is None:
            try:
                from rapidocr import RapidOCR
            except ImportError as exc:
                raise ConfigError(
                    f"rapidocr is not importable ({exc})",
                    "install the sdk extra: pip install 'ocrstack[sdk]'",
                ) from exc
            model_dir = _bundled_model_dir()
            if not any(model_dir.glob("*.onnx")):
                raise ConfigError(
                    f"rapidocr's bundled ONNX models are missing from {model_dir}",
                    "reinstall rapidocr from PyPI (the wheel ships PP-OCR det/rec/cls models)",
                )
            params = {"Global.log_level": "warning", "Global.model_root_dir": str(model_dir)}
            self._engine = RapidOCR(params=params)
            quiet_rapidocr_warnings()
        return self._engine

    # -- line reading ---------------------------------------------------------------
    def read_lines(self, image: Image.Image) -> list[Line]:
        """Detect and recognise every text line of ``image`` (RGB); bboxes in its pixels.

        Lines scoring below ``min_score`` (rapidocr's default 0.5) are dropped.
        """
        from rapidocr.ch_ppocr_rec import TextRecInput
        from rapidocr.utils.process_img import get_rotate_crop_image

        arr = np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])  # rapidocr wants BGR
        eng = self.engine()
        with self._lock:
            out = eng(arr, use_cls=False, text_score=0.0)
            if out.txts is None or out.boxes is None or len(out.txts) == 0:
                return []
            polys = [np.asarray(b, dtype=np.float32) for b in out.boxes]
            texts = list(out.txts)
            scores = [float(s) for s in out.scores]
            crops = [get_rotate_crop_image(arr, p.copy()) for p in polys]
            cls = eng._load_cls_model()(crops).cls_res  # rapidocr has no public per-crop API
            flip_ids = [i for i, (label, _) in enumerate(cls) if str(label) == "180"]
            flipped = [False] * len(texts)
            if flip_ids:
                rot = [np.ascontiguousarray(np.rot90(crops[i], 2)) for i in flip_ids]
                rr = eng._load_rec_model()(TextRecInput(img=rot))
                for j, i in enumerate(flip_ids):
                    if rr.txts and rr.txts[j].strip() and float(rr.scores[j]) > scores[i]:
                        texts[i], scores[i], flipped[i] = rr.txts[j], float(rr.scores[j]), True
        lines = []
        for p, t, s, f in zip(polys, texts, scores, flipped, strict=True):
            if s < self.min_score or not t.strip():
                continue
            w = max(np.linalg.norm(p[0] - p[1]), np.linalg.norm(p[2] - p[3]))
            h = max(np.linalg.norm(p[0] - p[3]), np.linalg.norm(p[1] - p[2]))
            bbox = (float(p[:, 0].min()), float(p[:, 1].min()), float(p[:, 0].max()), float(p[:, 1].max()))
            dx, dy = (float(v) for v in p[1] - p[0])
            lines.append(
                Line(
                    bbox,
                    t.strip(),
                    s,
                    vertical=bool(h >= VERTICAL_RATIO * w),
                    flipped=f,
                    angle=math.degrees(math.atan2(dy, dx)),
                )
            )
        return lines

    @staticmethod
    def page_rotation(lines: list[Line]) -> int:
        """Counter-clockwise rotation (0, 90, 180, 270 degrees) that makes most text upright.

        Votes are weighted by characters; lines shorter than ``VOTE_MIN_CHARS`` do not vote.
        A vertical line read without flip runs top-to-bottom (content turned 90 degrees
        clockwise), so the page is turned 90 counter-clockwise; flipped, 270.
        """
        votes = {0: 0, 90: 0, 180: 0, 270: 0}
        for ln in lines:
            n = len(ln.text)
            if n < VOTE_MIN_CHARS:
                continue
            if ln.vertical:
                votes[270 if ln.flipped else 90] += n
            else:
                votes[180 if ln.flipped else 0] += n
        total = sum(votes.values())
        best = max(votes, key=lambda k: votes[k])
        return best if total and votes[best] * 2 > total and best != 0 else 0

    @staticmethod
    def page_skew(lines: list[Line]) -> float:
        """Skew of the page's text in degrees (image coordinates, positive = lines descend to
        the right), or 0.0 when it is too small to matter or not measurable.

        The median top-edge slope of the long horizontal lines (at least ``SKEW_MIN_CHARS``
        characters, width at least 4x height, at least ``SKEW_MIN_LINES`` of them). Returned
        only between ``MIN_SKEW`` and ``MAX_SKEW`` degrees. Measured: odd_rotate90_skewed_scan
        -2.55 (79 lines, 10-90 % of them between -2.67 and -2.41); born-digital pages 0.0.
        """
        angles = sorted(
            ln.angle
            for ln in lines
            if not ln.vertical
            and len(ln.text) >= SKEW_MIN_CHARS
            and ln.bbox[2] - ln.bbox[0] >= 4 * (ln.bbox[3] - ln.bbox[1])
        )
        if len(angles) < SKEW_MIN_LINES:
            return 0.0
        skew = median(angles)
        return round(skew, 2) if MIN_SKEW <= abs(skew) <= MAX_SKEW else 0.0

    def orient(self, page: PageImage) -> tuple[PageImage, int]:
        """Return (``page`` turned upright, rotation in degrees counter-clockwise).

        A turned page is a new PageImage with a note; an upright one is ``page`` itself.

        The lines read while deciding are kept for :meth:`recognize`, so an upright page is
        read exactly once.
        """
        key = (page.source_sha256, page.index, page.dpi, page.size)
        hit = self.memo is not None and key in self.memo
        if hit:
            rotation, lines, skew = self.memo[key]
        else:
            lines = self.read_lines(page.image)
            rotation = self.page_rotation(lines)
        if rotation:
            image = page.image.rotate(rotation, expand=True)
            page = dataclasses.replace(
                page,
                image=image,
                notes=(
                    *page.notes,
                    f"page turned {rotation} degrees counter-clockwise to make its text upright",
                ),
            )
            if not hit:
                lines = self.read_lines(image)
        if not hit:
            skew = self.page_skew(lines)
        if skew:
            # turn the text level before layout and reading order: a skewed two-column scan
            # otherwise merges lines of both columns into one row (review of issue 3)
            image = page.image.convert("RGB").rotate(
                skew, resample=Image.Resampling.BICUBIC, expand=True, fillcolor="white"
            )
            page = dataclasses.replace(
                page,
                image=image,
                notes=(*page.notes, f"page deskewed: text was tilted {skew:g} degrees, turned level"),
            )
            if not hit:
                lines = self.read_lines(image)
        if self.memo is not None:
            self.memo[key] = (rotation, lines, skew)
        self._lines[id(page.image)] = [dataclasses.replace(ln) for ln in lines]
        return page, rotation

    # -- Recognizer protocol --------------------------------------------------------
    def recognize(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        """Fill each block's text from the page's lines; append ``recovered`` blocks for uncovered lines.

        Returns ``blocks`` (same order, text and warnings filled) followed by new text
        blocks (label ``recovered``) for lines no block covers by at least half.
        """
        lines = self._lines.pop(id(page.image), None)
        if lines is None:
            lines = self.read_lines(page.image)
        return assign_lines(blocks, lines, structured=False)


def assign_lines(blocks: list[Block], lines: list[Line], structured: bool = False) -> list[Block]:
    """Give every line to exactly one block and set the blocks' text (nothing is read twice).

    A line goes to the block covering the largest fraction of it (at least 0.5); on a tie
    the smaller block wins (a title inside a text block keeps its own line). A figure also
    takes a line whose box holds at least half of the figure (tables_googledocs_grid: the
    picture of a snake came back as one "line" reading "2", larger than the figure box). Text-bearing
    blocks grow to contain their lines so crops and overlays show whole glyphs. Lines no
    block covers are grouped into ``recovered`` TEXT blocks (issue 3: 17% of the bzip2
    manual's lines fell outside every rapid-layout block).
    """
    owners: dict[int, list[Line]] = {i: [] for i in range(len(blocks))}
    loose: list[Line] = []
    for ln in lines:
        best, best_key = None, None
        for i, b in enumerate(blocks):
            c = covered(ln.bbox, b.bbox)
            if b.category is Category.FIGURE:
                # a "line" drawn around a picture (rapidocr reads shapes as glyphs) belongs to it
                c = max(c, covered(b.bbox, ln.bbox))
            elif (
                c < 0.5
                and covered(b.bbox, ln.bbox) >= CONTAINED_BLOCK
                and area(ln.bbox) <= (CONTAINED_AREA_RATIO * area(b.bbox))
            ):
                # a tight layout box inside the (padded) line box: a page number
                c = 0.5
            if c >= 0.5:
                key = (round(c, 2), -area(b.bbox))
                if best_key is None or key > best_key:
                    best, best_key = i, key
        if best is None:
            loose.append(ln)
        else:
            owners[best].append(ln)
    promote_title_headers(blocks, owners, lines)
    for i, b in enumerate(blocks):
        own = owners[i]
        b.text = join_lines(own, columns=b.category not in ROW_ORDER)
        if own and b.category is not Category.FIGURE:
            b.bbox = union([b.bbox, *(ln.bbox for ln in own)])
        if own and not structured and b.category in FALLBACK_WARNING:
            b.warnings.append(FALLBACK_WARNING[b.category])
    extra = [
        Block(
            bbox=union(ln.bbox for ln in g),
            category=Category.TEXT,
            score=min(ln.score for ln in g),
            order=len(blocks) + k,
            label="recovered",
            text=join_lines(g),
        )
        for k, g in enumerate(group_lines(loose))
    ]
    return [*blocks, *extra]


def promote_title_headers(blocks: list[Block], owners: dict[int, list[Line]], lines: list[Line]) -> None:
    """Turn ``header`` blocks that are really a title back into content, in place.

    rapid-layout labels the masthead of en_twocol_ltnews24 ("LaTeX News" / "Issue 24,
    February 2016") and the title of en_multicol_pari_refcard ("Pari-GP reference card")
    ``header``, and assembly drops headers. Running heads are set at or below body size
    (every header of the corpus pages: 0.9-1.2x the page's median line height), those titles
    at 1.7-2.4x. So a header block whose own lines' median height is at least
    ``TITLE_HEIGHT_RATIO`` times the page's median line height becomes a TITLE, and header
    blocks stacked right under it (vertical gap at most one median line height, overlapping
    horizontally: the masthead's subtitle) become TEXT. Each changed block gets a warning.
    """
    heights = [ln.bbox[3] - ln.bbox[1] for ln in lines]
    if not heights:
        return
    lh = median(heights)
    promoted: list[Block] = []
    for i, b in sorted(enumerate(blocks), key=lambda t: t[1].bbox[1]):
        if b.category is not Category.HEADER or not owners[i]:
            continue
        own_h = median(ln.bbox[3] - ln.bbox[1] for ln in owners[i])
        if own_h >= TITLE_HEIGHT_RATIO * lh:
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


def join_lines(lines: list[Line], columns: bool = True) -> str:
    """Order ``lines`` (see :func:`ocrstack.parsing.reading_order.order_lines`) and join them.

    Lines on the same row are joined with a space, rows with a newline.
    """
    if not lines:
        return ""
    boxes = [ln.bbox for ln in lines]
    idx = order_lines(boxes, columns=columns)
    out: list[str] = []
    prev: BBox | None = None
    for i in idx:
        b = boxes[i]
        if prev is not None:
            ov = min(prev[3], b[3]) - max(prev[1], b[1])
            same_row = ov >= 0.5 * min(prev[3] - prev[1], b[3] - b[1]) and b[0] >= prev[2] - 2
            out.append(" " if same_row else "\n")
        out.append(lines[i].text)
        prev = b
    return "".join(out)


def group_lines(lines: list[Line]) -> list[list[Line]]:
    """Group loose lines into paragraphs: a line joins a group whose box it overlaps horizontally
    and whose bottom is at most one median line height above it."""
    if not lines:
        return []
    lh = median(ln.bbox[3] - ln.bbox[1] for ln in lines)
    groups: list[list[Line]] = []
    boxes: list[BBox] = []
    for ln in sorted(lines, key=lambda x: (x.bbox[1], x.bbox[0])):
        b = ln.bbox
        for k, gb in enumerate(boxes):
            if min(gb[2], b[2]) > max(gb[0], b[0]) and -lh <= b[1] - gb[3] <= lh:
                groups[k].append(ln)
                boxes[k] = union([gb, b])
                break
        else:
            groups.append([ln])
            boxes.append(b)
    return groups


def create(options: ParseOptions) -> RapidOcrRecognizer:
    """Factory for :mod:`ocrstack.parsing.recognition`; ``options`` is unused (CPU, offline)."""
    return RapidOcrRecognizer()
