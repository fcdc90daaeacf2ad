"""Recognizer runtime choice: ONNX Runtime by default, OpenVINO bf16 on request where it works (issue 11)."""

from __future__ import annotations

import builtins
import sys

import pytest

from ocrstack.parsing.recognition.rapidocr import openvino_rec as V


def _no_openvino(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "openvino" or name.startswith("openvino."):
            raise ImportError("No module named 'openvino'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "openvino", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)


def test_onnxruntime_is_the_default():
    from ocrstack.parsing.options import ParseOptions
    from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer, create

    assert ParseOptions(inputs=()).ocr_runtime == "onnxruntime" == RapidOcrRecognizer().runtime
    assert V.rec_session("any.onnx", 2) is None
    assert V.runtime_name("onnxruntime") == "onnxruntime"
    rec = create(ParseOptions(inputs=(), ocr_runtime="openvino"))
    assert rec.runtime == "openvino" and "ocr_runtime" in rec.cache_fields  # in the page-cache key


def test_without_openvino_the_recognizer_stays_on_onnxruntime(monkeypatch):
    _no_openvino(monkeypatch)
    assert V.rec_session("any.onnx", 2, "openvino") is None
    assert V.runtime_name("openvino") == "onnxruntime"


def test_a_cpu_without_bf16_stays_on_onnxruntime(monkeypatch):
    class Core:
        def get_property(self, device, name):
            assert (device, name) == ("CPU", "OPTIMIZATION_CAPABILITIES")
            return ["FP32", "INT8"]

    class Module:
        pass

    fake = Module()
    fake.Core = Core
    monkeypatch.setitem(sys.modules, "openvino", fake)
    assert V.rec_session("any.onnx", 2, "openvino") is None


def test_build_without_openvino_uses_onnxruntime_sessions_for_every_model(monkeypatch):
    pytest.importorskip("rapidocr")
    import onnxruntime as ort

    from ocrstack.parsing.recognition.rapidocr import reading as E
    from ocrstack.parsing.recognition.rapidocr.recognizer import _bundled_model_dir

    _no_openvino(monkeypatch)
    params = {"Global.log_level": "warning", "Global.model_root_dir": str(_bundled_model_dir())}
    engine = E.build(params, "openvino")
    rec = E.stage_model(engine, "rec")
    assert isinstance(rec.session.session, ort.InferenceSession)


def test_openvino_bf16_reads_like_onnxruntime(monkeypatch):
    """On request, where openvino and a BF16 CPU are present, the recognizer runs on it and reads."""
    pytest.importorskip("rapidocr")
    pytest.importorskip("openvino")
    if V.runtime_name("openvino") != "openvino-bf16":
        pytest.skip("this CPU has no BF16 in OpenVINO's capabilities")
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    from ocrstack.parsing.recognition.rapidocr import reading as E
    from ocrstack.parsing.recognition.rapidocr.recognizer import _bundled_model_dir

    params = {"Global.log_level": "warning", "Global.model_root_dir": str(_bundled_model_dir())}
    rec = E.stage_model(E.build(params, "openvino"), "rec")
    assert isinstance(rec.session, V.RecSession)
    img = Image.new("RGB", (420, 40), "white")
    ImageDraw.Draw(img).text(
        (8, 6), "recognition in bfloat16", fill="black", font=ImageFont.load_default(size=24)
    )
    crop = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    texts, scores = E.recognize(rec, [crop] * 8)  # two streams of batches, per-thread requests
    assert all(t.replace(" ", "") == "recognitioninbfloat16" for t in texts), texts
    assert min(scores) > 0.9
