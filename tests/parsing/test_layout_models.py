"""Model-backed layout kinds: pp-doclayout-v3 (transformers) and paddlex (guide 3.4 directory).

pp-doclayout-v3 is exercised with a tiny, randomly initialised checkpoint built here from
the real ``PPDocLayoutV3Config`` / ``PPDocLayoutV3ForObjectDetection`` classes and saved
with ``save_pretrained``: it must load from disk and run through post-processing; its
boxes are random, which is fine for checking the plumbing (label names from the
checkpoint's config, bbox in page pixels, the model's order kept).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ocrstack.core.errors import ConfigError
from ocrstack.parsing import layout
from ocrstack.parsing.layout.labels import tables
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.types import PageImage
from support.inputs import paper

#: id2label of the released PP-DocLayoutV3 checkpoint (25 classes).
LABELS = [
    "abstract", "algorithm", "aside_text", "chart", "content", "display_formula", "doc_title",
    "figure_title", "footer", "footer_image", "footnote", "formula_number", "header", "header_image",
    "image", "inline_formula", "number", "paragraph_title", "reference", "reference_content", "seal",
    "table", "text", "vertical_text", "vision_footnote",
]  # fmt: skip


def build_tiny_pp_doclayout_v3(path: Path, seed: int = 0) -> Path:
    """Write a ~1 MB random PP-DocLayoutV3 checkpoint (config.json, model.safetensors, preprocessor)."""
    import torch
    from transformers import (
        HGNetV2Config,
        PPDocLayoutV3Config,
        PPDocLayoutV3ForObjectDetection,
        PPDocLayoutV3ImageProcessor,
    )

    backbone = HGNetV2Config(
        stem_channels=[3, 8, 8], stage_in_channels=[8, 16, 32, 64], stage_mid_channels=[8, 8, 16, 16],
        stage_out_channels=[16, 32, 64, 128], hidden_sizes=[16, 32, 64, 128], stage_num_blocks=[1, 1, 1, 1],
        stage_numb_of_layers=[1, 1, 1, 1], out_features=["stage1", "stage2", "stage3", "stage4"],
    )  # fmt: skip
    config = PPDocLayoutV3Config(
        backbone_config=backbone, encoder_in_channels=[32, 64, 128], encoder_hidden_dim=32,
        encoder_ffn_dim=32, d_model=32, decoder_in_channels=[32, 32, 32], decoder_ffn_dim=32,
        decoder_layers=1, num_queries=20,
        num_denoising=0, x4_feat_dim=16, mask_feature_channels=[16, 16], num_prototypes=8,
        global_pointer_head_size=16, encoder_attention_heads=2, decoder_attention_heads=2,
        id2label=dict(enumerate(LABELS)), label2id={name: i for i, name in enumerate(LABELS)},
    )  # fmt: skip
    torch.manual_seed(seed)
    PPDocLayoutV3ForObjectDetection(config).eval().save_pretrained(path)
    PPDocLayoutV3ImageProcessor(size={"height": 160, "width": 160}).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    return build_tiny_pp_doclayout_v3(tmp_path_factory.mktemp("ppdl3"))


def _page(w=400, h=600) -> PageImage:
    return PageImage("x.png", 0, paper((w, h)), None, "0" * 64)  # ink: a blank page is not laid out


def test_label_table_covers_every_pp_doclayout_v3_class():
    assert set(LABELS) <= set(tables()["pp-doclayout"])


@pytest.mark.slow
def test_tiny_checkpoint_loads_from_disk_and_runs(tiny_checkpoint):
    from ocrstack.parsing.layout.ppdoclayout import PPDocLayoutV3Provider

    assert json.loads((tiny_checkpoint / "config.json").read_text())["model_type"] == "pp_doclayout_v3"
    provider = PPDocLayoutV3Provider(tiny_checkpoint, threshold=0.0)  # random weights: low scores
    assert provider.gives_order and provider.id2label[6] == "doc_title"
    blocks = provider.detect(_page())
    assert blocks, "post-processing returned nothing"
    assert [b.order for b in blocks] == list(range(len(blocks)))
    for b in blocks:
        assert 0 <= b.bbox[0] < b.bbox[2] <= 400 and 0 <= b.bbox[1] < b.bbox[3] <= 600
        assert b.label in LABELS and 0.0 <= b.score <= 1.0


@pytest.mark.slow
def test_registry_uses_layout_model_dir_then_env(tiny_checkpoint, monkeypatch):
    monkeypatch.delenv("OCR_LAYOUT_MODEL_DIR", raising=False)
    with pytest.raises(ConfigError, match="OCR_LAYOUT_MODEL_DIR"):
        layout.create("pp-doclayout-v3", ParseOptions(inputs=()))
    p = layout.create("pp-doclayout-v3", ParseOptions(inputs=(), layout_model=tiny_checkpoint))
    assert p.name == "pp-doclayout-v3"
    monkeypatch.setenv("OCR_LAYOUT_MODEL_DIR", str(tiny_checkpoint))
    assert layout.create("pp-doclayout-v3", ParseOptions(inputs=())).model_dir == tiny_checkpoint


@pytest.mark.slow
def test_pipeline_keeps_the_providers_reading_order(tiny_checkpoint):
    from ocrstack.parsing.layout.ppdoclayout import PPDocLayoutV3Provider
    from ocrstack.parsing.stages import Parser

    class Tagged(PPDocLayoutV3Provider):
        # the model's order, written into the label so it survives merging and renumbering;
        # boxes spread bottom-to-top (random weights put them all in one place), so a
        # position-based order would reverse them
        def detect(self, page):
            blocks = super().detect(page)
            for b in blocks:
                b.label = f"{b.label}#{b.order}"
                b.bbox = (10, 580 - 20 * b.order, 390, 594 - 20 * b.order)
            return blocks

    from ocrstack.parsing.engines import Recognizer

    class Echo(Recognizer):  # the engine protocol's defaults (orient, probe, ...) from the base class
        name = "echo"
        structured = False

        def recognize(self, page, blocks):
            for b in blocks:
                b.text = b.label
            return blocks

    parser = Parser(ParseOptions(inputs=()), layout=Tagged(tiny_checkpoint, threshold=0.0), recognizer=Echo())
    result = parser.parse_page(_page())
    model_order = [int(b.label.split("#")[1]) for b in result.blocks]
    assert len(model_order) > 3 and model_order == sorted(model_order)
    assert [b.order for b in result.blocks] == list(range(len(result.blocks)))


def _paddle_dir(tmp_path: Path) -> Path:
    d = tmp_path / "PP-DocLayoutV3_infer"
    d.mkdir()
    for f in ("inference.pdiparams", "inference.json", "inference.yml"):
        (d / f).write_bytes(b"x")
    return d


def test_pp_doclayout_v3_explains_a_paddle_inference_dir(tmp_path):
    with pytest.raises(ConfigError, match="Paddle inference directory.*--layout paddlex"):
        layout.create("pp-doclayout-v3", ParseOptions(inputs=(), layout_model=_paddle_dir(tmp_path)))


def test_pp_doclayout_v3_rejects_other_model_types(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "minicpm_ocr"}))
    with pytest.raises(ConfigError, match="'minicpm_ocr', expected 'pp_doclayout_v3'"):
        layout.create("pp-doclayout-v3", ParseOptions(inputs=(), layout_model=tmp_path))


def test_paddlex_explains_a_safetensors_dir_with_the_guide_text(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"x")
    with pytest.raises(ConfigError) as err:
        layout.create("paddlex", ParseOptions(inputs=(), layout_model=tmp_path))
    text = err.value.render()
    assert "not a Paddle inference directory (a safetensors/transformers checkpoint" in text
    assert "inference.pdiparams, inference.json and inference.yml, not a safetensors directory" in text
    assert "PP-DocLayoutV3_infer.tar" in text and "--layout pp-doclayout-v3" in text


def test_paddlex_missing_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("OCR_LAYOUT_MODEL_DIR", raising=False)
    with pytest.raises(ConfigError, match="does not exist"):
        layout.create("paddlex", ParseOptions(inputs=(), layout_model=tmp_path / "nope"))


@pytest.mark.skipif(importlib.util.find_spec("paddlex") is not None, reason="paddlex is installed here")
def test_paddlex_absent_gives_install_command(tmp_path):
    with pytest.raises(ConfigError, match=r"pip install paddlex==3\.4\.2 paddlepaddle==3\.2\.1"):
        layout.create("paddlex", ParseOptions(inputs=(), layout_model=_paddle_dir(tmp_path)))


@pytest.mark.skipif(
    importlib.util.find_spec("paddlex") is None, reason="paddlex not importable (optional sdk engine)"
)
def test_paddlex_loads_the_guide_inference_dir(monkeypatch):
    import os

    d = os.environ.get("OCR_LAYOUT_MODEL_DIR")
    if not d or not Path(d, "inference.pdiparams").is_file():
        pytest.skip("set OCR_LAYOUT_MODEL_DIR to the guide's PP-DocLayoutV3_infer directory")
    provider = layout.create("paddlex", ParseOptions(inputs=()))
    blocks = provider.detect(_page(800, 1000))
    assert all(0 <= b.bbox[0] < b.bbox[2] <= 800 for b in blocks)
