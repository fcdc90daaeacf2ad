"""OpenVINO sessions (:mod:`ocrstack.parsing.engines.ov_session`): the model cache's folder and the
ONNX metadata read without onnx (issue 21: the layout model compiled from its path, so a cached
blob loads without reading the ONNX file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ocrstack.parsing.engines import ov_session


def _varint(n: int) -> bytes:
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_onnx_metadata_reads_the_string_entries_and_skips_everything_else(tmp_path: Path):
    entry = _field(1, b"character") + _field(2, "text\ntitle\n\u6807\u9898".encode())
    model = (
        _varint(1 << 3)
        + _varint(8)  # ir_version = 8 (a varint field)
        + _field(7, b"\x00" * 300)  # the graph: skipped by its length
        + _field(14, entry)
        + _field(14, _field(1, b"author") + _field(2, b"x"))
    )
    path = tmp_path / "m.onnx"
    path.write_bytes(model)
    assert ov_session.onnx_metadata(path) == {"character": "text\ntitle\n\u6807\u9898", "author": "x"}
    path.write_bytes(model[:-3])
    with pytest.raises(ValueError):
        ov_session.onnx_metadata(path)


def test_onnx_metadata_of_the_layout_model_is_onnxruntimes():
    ort = pytest.importorskip("onnxruntime")
    from ocrstack.parsing.layout.rapid import bundled_model

    session = ort.InferenceSession(str(bundled_model()), providers=["CPUExecutionProvider"])
    expected = session.get_modelmeta().custom_metadata_map
    assert ov_session.onnx_metadata(bundled_model()) == expected and "character" in expected


def test_the_model_cache_lives_in_the_user_cache_folder(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert ov_session.cache_dir() == tmp_path / "cache" / "ocrstack" / "openvino"
    assert (tmp_path / "cache" / "ocrstack" / "openvino").is_dir()
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert ov_session.cache_dir() is None


def test_a_compiled_layout_model_is_cached_and_loads_again(tmp_path: Path, monkeypatch):
    pytest.importorskip("openvino")
    from ocrstack.parsing.layout.rapid import RapidLayoutProvider

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = RapidLayoutProvider()
    assert first._engine and first.runtime == "openvino-f32"
    blobs = list((tmp_path / "ocrstack" / "openvino").glob("*.blob"))
    assert len(blobs) == 1 and blobs[0].stat().st_size > 1 << 20
    again = RapidLayoutProvider()
    assert again._engine.pp_postprocess.labels == first._engine.pp_postprocess.labels
    assert len(again._engine.pp_postprocess.labels) == 10
    # one blob: the same model and settings
    assert os.listdir(tmp_path / "ocrstack" / "openvino") == [blobs[0].name]
