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
import math
import threading
from pathlib import Path
from statistics import median

import numpy as np
from PIL import Image

from ocrstack.core.errors import ConfigError
from ocrstack.parsing.engines import Recognizer
from ocrstack.parsing.geometry import pad
from ocrstack.parsing.lines.assign import (
    FALLBACK_WARNING,
    Line,
    assign_lines,
    group_lines,
    join_lines,
    promote_title_lines,
)
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.recognition.rapidocr import openvino_rec, reading, words
from ocrstack.parsing.recognition.rapidocr.quiet import quiet_rapidocr_warnings
from ocrstack.parsing.recognition.rapidocr.reread import RETRY_SCALE, RereadMixin
from ocrstack.parsing.types import Block, PageImage

__all__ = [
    "quiet_rapidocr_warnings",
    "FALLBACK_WARNING",
    "RETRY_SCALE",
    "Line",
    "RapidOcrRecognizer",
    "assign_lines",
    "create",
    "group_lines",
    "join_lines",
    "promote_title_lines",
]

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
#: rapidocr's detector default ``Det.limit_side_len`` with ``limit_type: min`` (rapidocr/config.yaml):
#: inputs with a shorter side are scaled up to it.
DET_MIN_SIDE = 736
#: Padding (pixels at 200 DPI) around a block read on its own (:meth:`RapidOcrRecognizer.recognize_only`):
#: a tight layout box cuts glyphs; 8 px = 1 mm takes in no neighbouring line at body size.
REGION_PAD = 8
#: Pages processed at once (:attr:`RapidOcrRecognizer.workers`): one. The other core still works
#: beside it: the next page renders in the pipeline's thread, the layout model runs on its own
#: thread beside the text layer and the OCR, and the text recognizer reads a page's lines on two
#: threads (:data:`~.reading.REC_STREAMS`); this recognizer's lock serialised two pages' OCR
#: anyway. A second page at once ran its Python (text layer, block filling) against the first's
#: for the one GIL: born-digital dev corpus warm (issue 21, shared 2-core machine at load 8) 0.17-0.26
#: s/page with one page at once against 0.32-0.40 with two, the same CPU, and 18 MB less peak RSS
#: on a two-page parse; the OCR path (2 scans and a two-page born-digital PDF, auto, load 13, three
#: alternating runs each) 4.93 / 5.97 / 2.80 s/page against 5.14 / 5.78 / 2.77.
PAGE_WORKERS = 1


def _bundled_model_dir() -> Path:
    """The ``models`` folder of the installed rapidocr wheel, found without importing rapidocr
    (its import pulls in ONNX Runtime and OpenCV; blocks.json names the models of every run,
    also of one that never read a line). A missing rapidocr gives a path that does not exist."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("rapidocr")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return Path("rapidocr-not-installed") / "models"
    return Path(spec.origin).resolve().parent / "models"


class RapidOcrRecognizer(RereadMixin, Recognizer):
    """:class:`~ocrstack.parsing.types.Recognizer` over rapidocr; safe for one page at a time per instance."""

    name = "rapidocr"
    #: rapidocr returns plain text only: no OTSL tables, no LaTeX formulas.
    structured = False
    #: reads the whole page and assigns lines to blocks (no crops, so no crop padding).
    reads_whole_page = True
    #: the text model's runtime changes a few readings (``--ocr-runtime``)
    cache_fields = frozenset({"ocr_runtime"})

    def __init__(
        self, min_score: float = MIN_SCORE, memo: dict | None = None, runtime: str = "onnxruntime"
    ) -> None:
        """``memo``: optional dict shared between instances that remembers each page's
        orientation and lines by (input sha256, page index, DPI, size), so the same page is
        read once per process (tests compare layouts on the same OCR). ``runtime``: the text
        model's runtime (``--ocr-runtime``, :mod:`~ocrstack.parsing.recognition.rapidocr.openvino_rec`)."""
        self.min_score = min_score
        self.runtime = runtime
        self._runtime_name: str | None = None
        self._engine = None
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._lines: dict[int, list[Line]] = {}
        self.memo = memo

    @property
    def workers(self) -> int:
        """Pages at once: :data:`PAGE_WORKERS` (see there why one)."""
        return PAGE_WORKERS

    @property
    def pages_in_flight(self) -> int:
        """Pages rendered and not finished at once: one more than :attr:`workers`. Rendering a
        page (0.05 s at 200 DPI) is short beside reading it, so one page ready for the next free
        worker is enough; the protocol's default (twice the workers) held two more page images
        (11 MB each at 200 DPI, A4/letter) for nothing."""
        return self.workers + 1

    def model_info(self) -> dict[str, str]:
        """Names of the ONNX files used (from the bundled model directory) and the text model's
        runtime as run (``openvino-bf16`` or ``onnxruntime``), for blocks.json."""
        return {
            "models": ", ".join(sorted(p.name for p in _bundled_model_dir().glob("*.onnx"))),
            "runtime": self.runtime_name(),
        }

    def runtime_name(self) -> str:
        """The text model's runtime as run (``openvino-bf16`` or ``onnxruntime``), decided once
        per recognizer: asking OpenVINO builds a ``Core`` and may log a fallback warning, and
        blocks.json asks per document."""
        if self._runtime_name is None:
            self._runtime_name = openvino_rec.runtime_name(self.runtime)
        return self._runtime_name

    def engine(self):  # rapidocr.RapidOCR, imported lazily
        """Return the (lazily built) ``rapidocr.RapidOCR`` engine using only the wheel's bundled models.

        Raises:
            ConfigError: rapidocr is not installed or its bundled models are missing.
        """
        with self._build_lock:  # pages in flight may ask first at once
            if self._engine is None:
                self._engine = self._build()
        return self._engine

    def _build(self):  # rapidocr.RapidOCR
        try:
            from rapidocr import RapidOCR  # noqa: F401 - availability check before build()
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
        engine = reading.build(params, self.runtime)  # sessions set once (issue 11)
        quiet_rapidocr_warnings()
        return engine

    def load(self) -> None:
        """Build the engine and load its detector, classifier and recognizer now
        (:meth:`~ocrstack.parsing.engines.Engine.load`; each otherwise loads on first use)."""
        engine = self.engine()
        for stage in ("det", "cls", "rec"):
            reading.stage_model(engine, stage)

    # -- line reading ---------------------------------------------------------------
    def read_lines(self, image: Image.Image, region: bool = False) -> list[Line]:
        """Detect and recognise every text line of ``image`` (RGB); bboxes in its pixels.

        ``region``: ``image`` is a block's crop, detected at its own pixels
        (:func:`~ocrstack.parsing.recognition.rapidocr.reading.detect_region`). Lines scoring
        below ``min_score`` (rapidocr's default 0.5) are dropped.
        """
        arr = np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])  # rapidocr wants BGR
        eng = self.engine()
        with self._lock:
            # detection sized by text height, classifier only for unsure lines (issue 11)
            raw = reading.read_raw(eng, arr, region=region)
        polys, texts, scores, flipped = raw.polys, raw.texts, raw.scores, raw.flipped
        lines = []
        for p, t, s, f, sp in zip(polys, texts, scores, flipped, raw.spans or [()] * len(polys), strict=True):
            if s < self.min_score or not t.strip():
                continue
            w = max(np.linalg.norm(p[0] - p[1]), np.linalg.norm(p[2] - p[3]))
            h = max(np.linalg.norm(p[0] - p[3]), np.linalg.norm(p[1] - p[2]))
            bbox = (float(p[:, 0].min()), float(p[:, 1].min()), float(p[:, 0].max()), float(p[:, 1].max()))
            dx, dy = (float(v) for v in p[1] - p[0])
            turn = math.degrees(math.atan2(dy, dx))
            line = Line(bbox, t.strip(), s, vertical=bool(h >= VERTICAL_RATIO * w), flipped=f, angle=turn)
            lines += words.pieces(line, sp, w)  # cut at wide gaps, as the text layer's lines
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
            lines = self.read_page_lines(page.image)
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
                lines = self.read_page_lines(image)
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

        A page with no line at all was read again at ``RETRY_SCALE`` (:meth:`read_page_lines`),
        and a block still empty is read again from its own crop (:meth:`reread_empty`).

        Returns ``blocks`` (same order, text and warnings filled) followed by new text
        blocks (label ``recovered``) for lines no block covers by at least half.
        """
        lines = self._lines.pop(id(page.image), None)
        if lines is None:
            lines = self.read_page_lines(page.image)
        out = assign_lines(blocks, lines, structured=False, height=page.size[1])
        self.reread_empty(page, blocks, lines)
        return out

    def read_region(self, image: Image.Image) -> list[Line]:
        """Lines of a block's crop ``image`` (RGB), bboxes in its pixels: detected at the crop's
        own pixels (:meth:`read_lines` with ``region``); when that finds nothing, as before
        issue 11's region reads: rapidocr's detector scaling the crop up to a 736 px short side,
        the crop pasted on a white canvas of at least ``DET_MIN_SIDE`` each way first (a 100 px
        high strip otherwise became 9200 px wide: 12 s for one line strip of
        math_zh_gaokao_exam on the loaded machine). A crop without text pays both passes."""
        lines = self.read_lines(image, region=True)
        if lines:
            return lines
        if min(image.size) < DET_MIN_SIDE:
            size = (max(image.width, DET_MIN_SIDE), max(image.height, DET_MIN_SIDE))
            canvas = Image.new("RGB", size, "white")
            canvas.paste(image.convert("RGB"), (0, 0))
            image = canvas
        return self.read_lines(image)

    def recognize_only(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        """Read just ``blocks``, each from its own crop (padded by ``REGION_PAD`` at 200 DPI,
        :meth:`read_region`): the rest of the page came from the PDF's text layer, and a
        whole-page read would cost as much as OCR of the whole page (issue 11). Lines of a
        crop's margin that belong to a neighbour (less than half inside the block) are dropped.
        Returns ``blocks``."""
        margin = REGION_PAD * (page.dpi or 200) / 200
        for b in blocks:
            x0, y0, x1, y1 = pad(b.bbox, margin, page.size)
            if x1 - x0 < 2 or y1 - y0 < 2:
                continue
            crop = page.image.crop((round(x0), round(y0), round(x1), round(y1)))
            lines = [
                dataclasses.replace(
                    ln, bbox=(ln.bbox[0] + x0, ln.bbox[1] + y0, ln.bbox[2] + x0, ln.bbox[3] + y0)
                )
                for ln in self.read_region(crop)
            ]
            assign_lines([b], lines, structured=False)
        return blocks

    def read_line_crops(self, crops: list[Image.Image]) -> list[str]:
        """Text of each single-line crop with the text recognizer alone (no detection): the
        text layer's OCR sample and glyph lines, whose boxes are the layer's lines. Each crop
        is its own batch (:func:`~ocrstack.parsing.recognition.rapidocr.reading.recognize_each`).

        Not under the recognizer's lock: ONNX Runtime's ``run`` is thread-safe and rapidocr's
        ``TextRecognizer`` keeps no per-call state, and waiting behind another page's region
        reads left a core idle (math_zh_gaokao_exam page 2's sample waited 0.6 s behind page
        1's line reads)."""
        if not crops:
            return []
        imgs = [np.ascontiguousarray(np.asarray(c.convert("RGB"))[:, :, ::-1]) for c in crops]  # BGR
        return reading.recognize_each(reading.stage_model(self.engine(), "rec"), imgs)


def create(options: ParseOptions) -> RapidOcrRecognizer:
    """Factory for :mod:`ocrstack.parsing.recognition` (CPU, offline; ``options.ocr_runtime``)."""
    return RapidOcrRecognizer(runtime=options.ocr_runtime)
