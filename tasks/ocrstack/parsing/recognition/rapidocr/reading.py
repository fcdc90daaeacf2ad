"""The embedded OCR path's reading of one image: detection sized by text height, recognition,
orientation classifier only for lines whose reading is uncertain (issue 11 item 2).

:func:`read_raw` replaces one ``rapidocr.RapidOCR.__call__`` plus a classifier pass over every
crop. It drives rapidocr's own detector, classifier and recognizer objects (built once per
:class:`~ocrstack.parsing.recognition.rapidocr.recognizer.RapidOcrRecognizer`, i.e. once per process for a
parser) and changes four things. Their sum is measured by ``ocrstack bench``
(:mod:`ocrstack.bench.accuracy_table`, rows ``ocrstack off`` vs ``ocrstack off, before``, born-digital
dev corpus, 18 pages, shared 2-core machine). Load 8-9, one stream: 4.76 vs 10.43 s/page English,
4.79 vs 9.54 Chinese (1.67x pages/s). Load about 2.5, two streams: 3.42 vs 5.03 and 2.42 vs 3.92
(1.35x: rapidocr's all-core sessions lose less on an idle machine). Recall and order equal or
better in both (0.973/0.939 vs 0.970/0.935 English, 0.962/0.943 vs 0.960/0.940 Chinese):

* **Detection size from the page's text height.** rapidocr shrinks every image to a max side
  of 2000 px (``Global.max_side_len``) whatever its text size; A3 pages lose small text, letter
  pages pay for pixels the detector does not need. Here the page is first detected at
  :data:`PROBE_SIDE` (max side); when the median detected line is lower than
  :data:`MIN_TEXT_PX` detector pixels the page is detected again at the scale that makes it
  :data:`TARGET_TEXT_PX` (never above the page's own pixels, nor a max side over
  :data:`MAX_SIDE`); when the probe finds nothing the page is detected again at full size.
  Issue 11: max side 1280 instead of 2000 was 2.7x faster at equal recall (see PROBE_SIDE).
* **Crops from the full-resolution image**, not from the shrunk detector input: the recognizer
  scales each crop to 48 px high, so a 30 px line keeps its detail.
* **Classifier only where orientation is unknown.** rapidocr's classifier (0/180 degrees) ran
  over every crop; skipping it outright broke odd_rotated_text_boxes.pdf (recall 1.0 -> 0.55).
  A line read upright with score >= :data:`SURE_SCORE` is taken as upright; only the others
  (upside-down, rotated, or merely hard lines) and vertical boxes go to the classifier, and a
  line it calls 180 is read again turned and the better score wins (as before).
* **ONNX Runtime session options set once**, when the engine is built (:func:`build`): one
  intra-op thread, no spin-waiting, memory arena on. Measured on 120 line crops of
  en_multicol_pari_refcard on the shared 2-core machine (load 8-15), recognizer alone:
  rapidocr's sessions (all cores, spinning, arena off) 25.0 / 16.2 s, 2 threads without
  spinning 13.2 / 8.3 s, 1 thread 7.1 / 4.9 s (two rounds). Threads that spin for a core
  another process holds cost more than they give; the pipeline's render thread uses the
  other core.

Recognition keeps rapidocr's width-sorted batches (``TextRecognizer`` sorts crops by aspect
ratio, so a batch pads little) with :data:`REC_BATCH` crops a batch. Measured again (506 crops
of four corpus pages, two streams, load about 1.5): batch 1 11.1 s, batch 6 11.5 s; all batches
padded to rapidocr's minimum width (320 px at 48 high) add 10% of input width over the crops'
own (batch 1 without the minimum would add 0%), so neither lever is worth a change of readings.

The recognizer's runtime (ONNX Runtime f32 by default, OpenVINO bf16 opt-in) and its measured
trade: :mod:`~ocrstack.parsing.recognition.rapidocr.openvino_rec`.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from statistics import median

import numpy as np

from ocrstack.parsing.recognition.rapidocr import openvino_rec, words

#: the recognizer's logger (:mod:`ocrstack.parsing.recognition.rapidocr.recognizer`)
log = logging.getLogger("ocrstack.rapidocr")

#: Max side (px) of the first detection pass. Issue 11: 1280 detects as well as 2000 on
#: letter/A4 pages at 200 DPI (word recall). Tried 1600: the same line texts as 2000 on
#: tables_zh_debian_reference, but the accuracy suite got worse there (CER 0.071 -> 0.104: the
#: table grid built from line boxes moved) and on tables_googledocs_grid (recall 0.978).
PROBE_SIDE = 1280
#: A page whose median detected line box is lower than this (detector px) is detected again
#: larger: DB-style detectors (PP-OCR det) lose lines below about 10 px; 12 keeps a margin.
MIN_TEXT_PX = 12.0
#: Median line-box height (detector px) aimed at by the second pass.
TARGET_TEXT_PX = 20.0
#: Largest scale-up of a block's crop with small text (:func:`detect_region`): rapidocr's own
#: preprocessing scaled a crop up to a 736 px short side, 3.7x for a 200 px high block.
REGION_MAX_SCALE = 4.0
#: Upper bound of the detector's max side in the second pass (px): an A3 page at 200 DPI is
#: 3308 px high; 4000 bounds memory for larger renders.
MAX_SIDE = 4000
#: A line read upright at or above this score is not sent to the orientation classifier.
#: An upside-down line reads as noise (scores measured 0.3-0.8 on odd_rotated_text_boxes).
SURE_SCORE = 0.9
#: Crops per recognizer batch (rapidocr's default ``Rec.rec_batch_num``).
REC_BATCH = 6
#: ONNX Runtime intra-op threads per session (see the module docstring for the measurement).
INTRA_OP_THREADS = 1
#: Recognizer batches run side by side, each on its own single-threaded run of the same
#: session (ONNX Runtime's ``run`` is thread-safe and releases the GIL): both cores busy.
#: Measured, 100 crops of en_multicol_pari_refcard, load 2.7: one stream 4.77 / 4.73 s, two
#: streams 2.91 / 3.59 s.
REC_STREAMS = max(1, min(2, os.cpu_count() or 1))
#: rapidocr/config.yaml ``Global.width_height_ratio`` and ``Global.min_height``.
PAD_RATIO = 8
PAD_MIN_HEIGHT = 30
#: rapidocr/utils/process_img.py get_rotate_crop_image turns crops with h/w >= 1.5 by 90 degrees.
VERTICAL_RATIO = 1.5


@dataclass
class RawRead:
    """One image read: per detected box its polygon (4x2, image px), text, score, flipped flag,
    and the detector's scale (detector px per image px) with the number of detection passes."""

    polys: list[np.ndarray]
    texts: list[str]
    scores: list[float]
    flipped: list[bool]
    det_scale: float = 1.0
    det_passes: int = 1
    spans: list | tuple = ()  # per box: its words' x extents in its crop (words.spans)


def session_options():  # onnxruntime.SessionOptions, imported lazily
    """The ``onnxruntime.SessionOptions`` used for every model: full graph optimisation,
    ``INTRA_OP_THREADS`` threads, no spin-waiting (``session.intra_op.allow_spinning`` 0,
    onnxruntime's session config key), memory arena on, errors only in the log."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = INTRA_OP_THREADS
    opts.inter_op_num_threads = 1
    opts.enable_cpu_mem_arena = True
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


def stage_model(engine, stage: str):  # -> rapidocr's model classes, imported lazily
    """The model of stage ``det`` / ``cls`` / ``rec`` of a ``rapidocr.RapidOCR`` (``TextDetector``,
    ``TextClassifier``, ``TextRecognizer``), loaded on first use (rapidocr locks each stage).

    The one reach into rapidocr's private API (``RapidOCR._load_<stage>_model``, rapidocr 3.x
    ``main.py``): its public methods (``__call__``, ``detect_and_crop``, ``recognize_txt``) run a
    stage but give neither the model whose session :func:`build` replaces nor the detector's
    processing that :func:`_detect` drives at its own scales. AttributeError: another stage, or a
    rapidocr release that renamed its loaders.
    """
    return getattr(engine, f"_load_{stage}_model")()


def build(params: dict, runtime: str = "onnxruntime"):  # rapidocr.RapidOCR, imported lazily
    """A ``rapidocr.RapidOCR(params=params)`` whose detector, classifier and recognizer each load
    once, when a page first needs them (a text-layer page needs only the recognizer, for the OCR
    sample), on :func:`session_options` sessions; the recognizer on OpenVINO bf16 when
    :func:`.openvino_rec.rec_session` gives one for ``runtime``. ImportError: no rapidocr/onnxruntime.
    """
    import onnxruntime as ort
    from rapidocr import RapidOCR

    engine = RapidOCR(params=params)

    def owning(stage: str, load):  # load: rapidocr's loader of ``stage``
        lock, loaded = threading.Lock(), []

        def load_owned():  # the stage's model with our session, loaded once (stage_model calls this)
            with lock:
                if not loaded:
                    model = load()  # rapidocr's loader; .session.session is its InferenceSession
                    path = model.session.session._model_path
                    ov_rec = openvino_rec.rec_session(path, REC_STREAMS, runtime) if stage == "rec" else None
                    if ov_rec is not None:
                        model.session = ov_rec  # OpenVINO bf16; the dictionary is read already
                    else:
                        opts, cpu = session_options(), ["CPUExecutionProvider"]
                        model.session.session = ort.InferenceSession(path, sess_options=opts, providers=cpu)
                    loaded.append(model)
            return loaded[0]

        return load_owned

    for stage in ("det", "cls", "rec"):
        setattr(engine, f"_load_{stage}_model", owning(stage, getattr(engine, f"_load_{stage}_model")))
    return engine


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL  # one pool per process, like the models
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(REC_STREAMS, thread_name_prefix="ocrstack-rec")
        return _POOL


def recognize(rec, crops: list[np.ndarray]) -> tuple[list[str], list[float]]:
    """Texts and scores of ``crops`` (BGR line images) with rapidocr's ``TextRecognizer``
    ``rec`` (its ``rec_batch_num`` crops a batch), the batches run ``REC_STREAMS`` at a time.

    The batches are exactly rapidocr's own (``np.argsort`` of the width/height ratios, then
    consecutive runs of ``rec_batch_num``; rapidocr/ch_ppocr_rec/main.py), so every crop is
    padded as in one stream and reads the same; only their scheduling differs.
    """
    from rapidocr.ch_ppocr_rec import TextRecInput

    n, size = len(crops), max(1, int(rec.rec_batch_num))
    if REC_STREAMS < 2 or n <= size:
        out = rec(TextRecInput(img=crops))
        return [str(t) for t in (out.txts or [""] * n)], [float(v) for v in (out.scores or [0.0] * n)]
    order = np.argsort(np.array([c.shape[1] / float(c.shape[0]) for c in crops]))
    parts = [[int(i) for i in order[k : k + size]] for k in range(0, n, size)]
    results = list(_pool().map(lambda ix: rec(TextRecInput(img=[crops[i] for i in ix])), parts))
    texts, scores = [""] * n, [0.0] * n
    for ix, out in zip(parts, results, strict=True):
        for j, i in enumerate(ix):
            texts[i] = str(out.txts[j]) if out.txts else ""
            scores[i] = float(out.scores[j]) if out.scores else 0.0
    return texts, scores


def recognize_each(rec, crops: list[np.ndarray]) -> list[str]:
    """Texts of ``crops`` (BGR line images), each read in a batch of its own (no padding to a
    wider neighbour's width), ``REC_STREAMS`` at a time, longest first.

    For the text layer's few line crops (OCR sample, glyph lines), whose widths differ widely: a
    5-character title read in one batch with two 1200 px lines was padded to their width.
    Measured on the 42 line crops the dev corpus reads (21 calls): the same 42 texts as one
    batch a call, 1.39 s instead of 1.68 s on one core.
    """
    from rapidocr.ch_ppocr_rec import TextRecInput

    def one(i: int) -> str:
        out = rec(TextRecInput(img=[crops[i]]))
        return str(out.txts[0]) if out.txts else ""

    order = sorted(range(len(crops)), key=lambda i: -crops[i].shape[1] / max(1, crops[i].shape[0]))
    if REC_STREAMS < 2 or len(crops) < 2:
        texts = [one(i) for i in order]
    else:
        texts = list(_pool().map(one, order))
    out = [""] * len(crops)
    for i, t in zip(order, texts, strict=True):
        out[i] = t
    return out


def _resize(arr: np.ndarray, scale: float) -> np.ndarray:
    import cv2

    if abs(scale - 1.0) < 1e-3:
        return arr
    h, w = arr.shape[:2]
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    return cv2.resize(arr, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=interp)


def _box_height(p: np.ndarray) -> float:
    return float(max(np.linalg.norm(p[0] - p[3]), np.linalg.norm(p[1] - p[2])))


def _box_width(p: np.ndarray) -> float:
    return float(max(np.linalg.norm(p[0] - p[1]), np.linalg.norm(p[2] - p[3])))


def detection_scale(size: tuple[int, int], probe_heights: list[float] | None) -> float:
    """Scale (detector px per image px) for an image of ``size`` (width, height).

    ``probe_heights=None``: the probe scale, ``PROBE_SIDE / max side`` (at most 1). Otherwise
    the heights (probe detector px) of the lines the probe found: the probe scale when their
    median is at least ``MIN_TEXT_PX``, else the scale that makes the median ``TARGET_TEXT_PX``,
    at most 1 and at most ``MAX_SIDE / max side``. When the probe found nothing, the largest
    scale (1, or ``MAX_SIDE / max side``): at a 1280 probe, 10 px text on a 3300 px page gave
    no box at all (8 px text at the 1600 probe: tests/parsing/recognition/rapidocr/test_reading.py).
    Heights are of the detector's boxes, which include its unclip margin (``Det.unclip_ratio`` 1.6):
    12 px glyphs gave about 15 px boxes at the 1280 probe of a 3300 px page.
    """
    side = max(size)
    probe = min(1.0, PROBE_SIDE / side)
    if probe_heights is None:
        return probe
    horiz = [h for h in probe_heights if h > 0]
    if not horiz:  # nothing found: text too small for the probe, or a blank page
        return min(1.0, MAX_SIDE / side)
    med = median(horiz)
    if med >= MIN_TEXT_PX:
        return probe
    return min(1.0, MAX_SIDE / side, probe * TARGET_TEXT_PX / med)


def _det_native(det, img: np.ndarray):  # boxes array or None
    """rapidocr's ``TextDetector.__call__`` on ``img`` at its own size (rounded to multiples of
    32), without the preprocessing's scale-up to a 736 px short side (``Det.limit_type: min``)."""
    from rapidocr.ch_ppocr_det.utils import DetPreProcess

    x = DetPreProcess(max(img.shape[:2]) + 32, "max", det.mean, det.std)(img)  # ratio 1, then /32
    if x is None:
        return None
    boxes, _ = det.postprocess_op(det.session(x), img.shape[:2])
    return det.sorted_boxes(boxes) if len(boxes) else None


def _detect(det, bgr: np.ndarray, scale: float, native: bool = False) -> list[np.ndarray]:
    """Boxes (image px) found by rapidocr's ``TextDetector`` on ``bgr`` resized by ``scale``;
    ``native``: the resized image as it is (:func:`_det_native`), else rapidocr's preprocessing,
    which scales an input with a short side under 736 px up to it.

    A short or very wide image is padded above and below first, as rapidocr does
    (``apply_vertical_padding`` with ``Global.min_height`` 30 and ``width_height_ratio`` 8):
    the detector misses the text of a single-line strip otherwise.
    """
    from rapidocr.utils.process_img import apply_vertical_padding

    img, record = apply_vertical_padding(_resize(bgr, scale), {}, PAD_RATIO, PAD_MIN_HEIGHT)
    top = record["padding_1"]["top"]
    found = _det_native(det, img) if native else det(img).boxes
    if found is None or len(found) == 0:
        return []
    boxes = [np.asarray(b, dtype=np.float32) for b in found]
    for b in boxes:
        b[:, 1] -= top
    return [b / scale for b in boxes]


def _heights(boxes: list[np.ndarray], scale: float) -> list[float]:
    return [min(_box_height(b), _box_width(b)) * scale for b in boxes]


def detect(engine, bgr: np.ndarray) -> tuple[list[np.ndarray], float, int]:
    """Text boxes of ``bgr`` (H x W x 3, BGR) in its pixels, the detector scale used and the
    number of passes (1 or 2). See the module docstring for the size rule.

    ``engine``: a ``rapidocr.RapidOCR`` (its detector is built on first use).
    """
    det = stage_model(engine, "det")
    h, w = bgr.shape[:2]
    s0 = detection_scale((w, h), None)
    boxes = _detect(det, bgr, s0)
    s1 = detection_scale((w, h), _heights(boxes, s0))
    if s1 > s0 * 1.05:
        return _detect(det, bgr, s1), s1, 2
    return boxes, s0, 1


def detect_region(engine, bgr: np.ndarray) -> tuple[list[np.ndarray], float, int]:
    """Text boxes of a block's crop ``bgr`` (BGR, image px), the scale used and the passes.

    The crop is detected at its own pixels (:func:`_det_native`), not scaled up to rapidocr's
    736 px short side: a 200 x 60 px header crop became 2453 x 736 (1.8 Mpx, 1 s on this
    machine's core) for text that is already larger than the whole-page pass sees it (at
    :data:`PROBE_SIDE` a letter page is detected at 0.58). When the median box is lower than
    :data:`MIN_TEXT_PX` the crop is detected again at the scale that makes it
    :data:`TARGET_TEXT_PX` (never above :data:`REGION_MAX_SCALE`). ``[]`` when nothing is found:
    the caller then reads the crop the old way (:func:`read_raw` with ``region`` False).
    """
    det = stage_model(engine, "det")
    h, w = bgr.shape[:2]
    s0 = min(1.0, MAX_SIDE / max(h, w))
    boxes = _detect(det, bgr, s0, native=True)
    heights = [v for v in _heights(boxes, s0) if v > 0]
    med = median(heights) if heights else MIN_TEXT_PX
    if med < MIN_TEXT_PX:
        s1 = min(REGION_MAX_SCALE, MAX_SIDE / max(h, w), s0 * TARGET_TEXT_PX / med)
        if s1 > s0 * 1.05:
            return _detect(det, bgr, s1, native=True), s1, 2
    return boxes, s0, 1


def read_raw(engine, bgr: np.ndarray, rec_batch: int = REC_BATCH, region: bool = False) -> RawRead:
    """Detect and recognise every text box of ``bgr`` (H x W x 3 uint8, BGR; rapidocr's order).

    ``region``: ``bgr`` is a block's crop, detected by :func:`detect_region` (a whole page or
    image by :func:`detect`). Returns a :class:`RawRead` (no score filtering: the caller
    applies its threshold). Boxes are cropped from ``bgr`` itself. Lines below ``SURE_SCORE``
    and vertical boxes go to the orientation classifier; those it calls 180 degrees are read
    turned and keep the better reading. ``engine``: a ``rapidocr.RapidOCR``.
    """
    from rapidocr.ch_ppocr_rec import TextRecInput
    from rapidocr.utils.process_img import get_rotate_crop_image

    polys, scale, passes = (detect_region if region else detect)(engine, bgr)
    if not polys:
        # rapidocr's own pipeline logs this as a WARNING; here it is a DEBUG fact (blank page)
        log.debug("rapidocr: The text detection result is empty")
        return RawRead([], [], [], [], scale, passes)
    crops = [get_rotate_crop_image(bgr, p.copy()) for p in polys]
    rec = stage_model(engine, "rec")
    old_batch = rec.rec_batch_num
    rec.rec_batch_num = rec_batch
    try:
        texts, scores = recognize(boxes := words.WordBoxes(rec), crops)  # and where words stand
        spans, flipped = boxes.spans(crops), [False] * len(crops)
        unsure = [
            i
            for i, p in enumerate(polys)
            if scores[i] < SURE_SCORE or _box_height(p) >= VERTICAL_RATIO * _box_width(p)
        ]
        if unsure:
            cls = stage_model(engine, "cls")([crops[i] for i in unsure]).cls_res
            flip_ids = [i for i, (label, _) in zip(unsure, cls, strict=True) if str(label) == "180"]
            if flip_ids:
                rot = [np.ascontiguousarray(np.rot90(crops[i], 2)) for i in flip_ids]
                rr = rec(TextRecInput(img=rot))
                for j, i in enumerate(flip_ids):
                    if rr.txts and rr.txts[j].strip() and float(rr.scores[j]) > scores[i]:
                        texts[i], scores[i], flipped[i] = str(rr.txts[j]), float(rr.scores[j]), True
    finally:
        rec.rec_batch_num = old_batch
    return RawRead(polys, texts, scores, flipped, scale, passes, spans)
