"""OpenVINO in bfloat16 for rapidocr's text recognizer, where the CPU computes bf16 natively
(issue 11 item 2: recognition is ~90% of an OCR page).

The recognizer (``PP-OCRv6_rec_small.onnx``, bundled in the rapidocr wheel; 70% of its time is
convolutions) runs on ONNX Runtime in float32 by default. OpenVINO reads the same ONNX file (no
conversion, no download) and, on CPUs whose ``OPTIMIZATION_CAPABILITIES`` include ``BF16``
(AVX512-BF16 or AMX), computes it in bfloat16. Measured on 506 line crops of four corpus pages
(refcard, ltnews, ctex, debian tables), shared 2-core Xeon with avx512_bf16, two streams of one
thread each, recognizer alone, load about 1.5: ONNX Runtime f32 11.1-11.8 s (CPU 22-23 s),
OpenVINO f32 11.2-13.8 s (no gain, so OpenVINO is not used without BF16), OpenVINO bf16
6.5-6.9 s (CPU 12.8-13.4 s): 1.7x. Readings: 497 of 506 line texts identical to f32, the 9 others
spacing or punctuation (``；`` -> ``;``, ``. . .`` -> ``...``), mean score 0.985 either way.
Tried and dropped: ONNX Runtime dynamic int8 (MatMul only, 1.1x, 11 texts changed; all ops:
slower, 234 changed), static int8 QDQ convolutions calibrated on the same crops (1.6x, but 85
texts changed, ``liftall`` -> ``liftal1``).

Opt-in (``--ocr-runtime openvino``; openvino is in the ``sdk`` extra), not the default: the
accuracy suite (tests/parsing/test_accuracy.py) fails on one page with it. tables_googledocs_grid
page 1 reads ``3 2020 estimate`` (footnote mark, f32, score 0.966) as ``32020 estimate`` (bf16,
score 0.998): recall 0.9891 against the stored 0.9945 - 0.005 (CER 0.0077 and order 0.9755 are
better than stored). Keeping the CTC head, the MatMuls or every non-convolution node in f32
through the ``disable_fp16_compression`` runtime info changed nothing (same 9 texts, same speed):
the CPU plugin does not honour it for bf16. Whole pages, 18 dev-corpus pages (``ocrstack off``,
load 1.5-2): 2.49 s/page English, 1.95 Chinese with it, 3.19 / 2.62 without, 5.01 / 3.96 for the
pre-issue path; recall and order as without it (0.973/0.939, 0.962/0.945).

:func:`rec_session` returns ``None`` -- rapidocr's ONNX Runtime session stays -- unless
``--ocr-runtime openvino``, openvino imports and the CPU computes BF16.
"""

from __future__ import annotations

import logging

import numpy as np

from ocrstack.parsing.engines import ov_session

log = logging.getLogger("ocrstack.rapidocr")


def _bf16_core(runtime: str):  # openvino.Core or None
    """An ``openvino.Core`` when ``runtime`` is ``openvino``, openvino imports and its CPU plugin
    computes BF16, else None."""
    if runtime != "openvino":
        return None
    core = ov_session.core()
    if core is None:
        log.warning(
            "--ocr-runtime openvino but openvino is not installed or unusable (the sdk extra has it); "
            "using onnxruntime"
        )
        return None
    if not ov_session.has_bf16(core):
        log.warning(
            "--ocr-runtime openvino but this CPU has no BF16 (OpenVINO f32 measured no faster); "
            "using onnxruntime"
        )
        return None
    return core


def runtime_name(runtime: str) -> str:
    """``openvino-bf16`` when :func:`rec_session` would return a session for ``runtime``, else
    ``onnxruntime`` (what blocks.json records as the recognizer's runtime)."""
    return "openvino-bf16" if _bf16_core(runtime) is not None else "onnxruntime"


class RecSession(ov_session.OvSession):
    """Callable like rapidocr's ``OrtInferSession``: one float32 NCHW batch of line crops in, the
    logits out; an :class:`~ocrstack.parsing.engines.ov_session.OvSession` in bf16."""

    def __init__(self, core, model_path: str, streams: int) -> None:  # openvino.Core
        super().__init__(core, model_path, streams, "bf16", np.zeros((1, 3, 48, 320), np.float32))

    def __call__(self, batch: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return super().__call__(batch)[0]


def rec_session(model_path: str, streams: int, runtime: str = "onnxruntime") -> RecSession | None:
    """A :class:`RecSession` for ``model_path``, or None to keep ONNX Runtime (see module doc)."""
    core = _bf16_core(runtime)
    if core is None:
        return None
    return RecSession(core, model_path, streams)
