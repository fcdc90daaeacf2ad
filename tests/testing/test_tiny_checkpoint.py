"""Tiny MiniCPM-OCR checkpoint builder: real architecture, loadable, deterministic, small, varied output."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch not installed (install the 'tf' extra)")
transformers = pytest.importorskip("transformers", reason="transformers not installed ('tf' extra)")
if not hasattr(transformers, "MiniCPMOcrForConditionalGeneration"):
    pytest.skip("this transformers has no minicpm_ocr (needs >= 5.21)", allow_module_level=True)

from ocrstack.testing.tiny_checkpoint import PROCESSOR_TOKENS, build_tiny_minicpm_ocr  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_minicpm_ocr(tmp_path_factory.mktemp("ckpt") / "tiny", seed=0)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_files_and_size(tiny: Path) -> None:
    # guide 3.4: the model directory holds these files
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "preprocessor_config.json",
        "chat_template.jinja",
    ):
        assert (tiny / name).is_file(), name
    total = sum(p.stat().st_size for p in tiny.iterdir())
    assert total < 20 * 1024 * 1024


def test_deterministic_from_seed(tiny: Path, tmp_path: Path) -> None:
    again = build_tiny_minicpm_ocr(tmp_path / "again", seed=0)
    other = build_tiny_minicpm_ocr(tmp_path / "other", seed=1)
    assert _sha(again / "model.safetensors") == _sha(tiny / "model.safetensors")
    assert _sha(other / "model.safetensors") != _sha(tiny / "model.safetensors")


def test_refuses_non_empty_dir(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        build_tiny_minicpm_ocr(tmp_path / "x")
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine"


def test_loads_as_real_architecture_and_processor(tiny: Path) -> None:
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    assert AutoConfig.from_pretrained(tiny).model_type == "minicpm_ocr"
    model = AutoModelForImageTextToText.from_pretrained(tiny)
    assert type(model).__name__ == "MiniCPMOcrForConditionalGeneration"
    proc = AutoProcessor.from_pretrained(tiny)
    assert type(proc).__name__ == "MiniCPMOcrProcessor"
    for attr, token in PROCESSOR_TOKENS.items():
        assert getattr(proc.tokenizer, attr) == token
        assert proc.tokenizer.convert_tokens_to_ids(token) != proc.tokenizer.unk_token_id


def test_chat_template_honours_enable_thinking(tiny: Path) -> None:
    from transformers import AutoProcessor

    proc = AutoProcessor.from_pretrained(tiny)
    msgs = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    off = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False, enable_thinking=False)
    on = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    assert off.startswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert off.endswith("<think>\n\n</think>\n\n")
    assert on.endswith("<|im_start|>assistant\n")


def test_generates_varied_tokens_from_an_image(tiny: Path) -> None:
    import torch
    from PIL import Image, ImageDraw
    from transformers import AutoModelForImageTextToText, AutoProcessor

    proc = AutoProcessor.from_pretrained(tiny)
    model = AutoModelForImageTextToText.from_pretrained(tiny)
    img = Image.new("RGB", (400, 300), "white")
    ImageDraw.Draw(img).text((20, 20), "Total 42", fill="black")
    msgs = [{"role": "user", "content": [{"type": "image", "image": img}, {"type": "text", "text": "OCR"}]}]
    inputs = proc.apply_chat_template(
        msgs,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        return_tensors="pt",
        enable_thinking=False,
    )
    image_id = proc.tokenizer.convert_tokens_to_ids(PROCESSOR_TOKENS["image_token"])
    assert int((inputs["input_ids"] == image_id).sum()) > 0  # the processor expanded the image placeholder
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=24, do_sample=False)
    new = out[0, inputs["input_ids"].shape[1] :].tolist()
    assert len(new) > 1
    assert len(set(new)) >= len(new) // 3, f"degenerate output {new}"
