"""Tiny, randomly initialised checkpoints of the real MiniCPM-OCR architecture, for CPU tests.

:func:`build_tiny_minicpm_ocr` writes a directory that ``transformers serve`` (and
``AutoModelForImageTextToText`` / ``AutoProcessor``) load exactly like the released
``openbmb/MiniCPM-OCR-1.0`` checkpoint (guide 3.4 lists its files: ``config.json``,
``model.safetensors``, ``tokenizer.json``, ``preprocessor_config.json``,
``chat_template.jinja``), only with tiny dimensions and random weights:

* model: ``MiniCPMOcrForConditionalGeneration`` (``model_type: minicpm_ocr``, shipped by
  transformers >= 5.21), vision tower + window merger + downsample MLP + a Qwen3.5 text
  model with both linear-attention and full-attention layers;
* tokenizer: a byte-level BPE built with the ``tokenizers`` library (256 byte symbols, no
  merges, so every output token decodes to text) plus the ChatML tokens and the special
  tokens :class:`transformers.MiniCPMOcrProcessor` reads from the tokenizer (image, video,
  image start/end, slice start/end, image-id start/end);
* a ChatML chat template that honours ``enable_thinking`` (guide 4.1 passes
  ``--default-chat-template-kwargs '{"enable_thinking":false}'``; guide 5 the same per request);
* ``preprocessor_config.json`` / ``processor_config.json`` with a small slice resolution so a
  page turns into a few hundred visual tokens.

Weights are drawn from ``N(0, std)`` with ``std`` much larger than the default 0.02 so the
greedy output is a varied token sequence rather than one repeated token. Everything is
deterministic given ``seed`` (same seed -> byte-identical ``model.safetensors``).
Builds in a few seconds on CPU; the directory is about 2 MB.

No import shims and no monkeypatching: only public transformers / tokenizers APIs are used.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: Special tokens read by ``MiniCPMOcrProcessor.__init__`` (``tokenizer.image_token`` etc.),
#: stored as named ``extra_special_tokens`` in tokenizer_config.json (transformers v5 API).
#: The strings follow the MiniCPM-V family conventions.
PROCESSOR_TOKENS: dict[str, str] = {
    "image_token": "<|image_pad|>",
    "video_token": "<|video_pad|>",
    "image_start_token": "<image>",
    "image_end_token": "</image>",
    "slice_start_token": "<slice>",
    "slice_end_token": "</slice>",
    "image_id_start_token": "<image_id>",
    "image_id_end_token": "</image_id>",
}

#: ChatML control tokens and the thinking markers (Qwen3.5 text model convention).
CHATML_TOKENS: tuple[str, ...] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>")

#: ChatML template. Image items render as the processor's image token, which the processor
#: then expands to ``<image>`` + N x image token + ``</image>`` (+ slices). With
#: ``enable_thinking`` false the generation prompt carries an empty think block (Qwen3 style).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] in ('image', 'image_url') %}{{ '<|image_pad|>' }}"
    "{% elif item['type'] == 'video' %}{{ '<|video_pad|>' }}"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}"
    "{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}"
    "{% endif %}"
)

#: Standard deviation used for every weight matrix / embedding (default init uses 0.02).
INIT_STD = 0.5


def _tokenizer_json(out_dir: Path) -> dict[str, int]:
    """Write tokenizer.json (byte-level BPE, no merges) and return ``{special token: id}``."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    specials = list(CHATML_TOKENS) + list(PROCESSOR_TOKENS.values())
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tok.save(str(out_dir / "tokenizer.json"))
    return {t: tok.token_to_id(t) for t in specials}


def build_tiny_minicpm_ocr(out_dir: Path, seed: int = 0) -> Path:
    """Write a tiny random ``minicpm_ocr`` checkpoint into ``out_dir`` and return ``out_dir``.

    Args:
        out_dir: target directory; created if missing. Must be empty or absent (nothing is
            overwritten silently). The directory is written via a sibling temp dir and
            ``os.replace`` so a crash never leaves a half-written checkpoint.
        seed: torch RNG seed; the same seed gives byte-identical weights.

    Returns:
        ``out_dir`` holding config.json, generation_config.json, model.safetensors (~2 MB),
        tokenizer.json, tokenizer_config.json, chat_template.jinja, preprocessor_config.json,
        processor_config.json and README.md.

    Raises:
        FileExistsError: ``out_dir`` exists and is not empty.
        ImportError: torch / transformers (>= 5.21, ``minicpm_ocr``) / tokenizers missing.

    Source: architecture from transformers 5.23 ``models/minicpm_ocr``; file list from guide 3.4.
    """
    import torch
    from transformers import (
        MiniCPMOcrConfig,
        MiniCPMOcrForConditionalGeneration,
        MiniCPMOcrImageProcessor,
        MiniCPMOcrProcessor,
        MiniCPMOcrVideoProcessor,
        PreTrainedTokenizerFast,
    )

    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty; choose a new directory for the tiny checkpoint")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))

    ids = _tokenizer_json(tmp)
    vocab_size = 256 + len(ids)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(tmp / "tokenizer.json"),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=dict(PROCESSOR_TOKENS),
        model_max_length=32768,
        padding_side="left",
    )

    config = MiniCPMOcrConfig(
        text_config={
            "model_type": "qwen3_5_text",
            "vocab_size": vocab_size,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 4,  # 3 linear-attention (Gated DeltaNet) + 1 full-attention layer
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 16,
            "linear_value_head_dim": 16,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
            "max_position_embeddings": 32768,
            "tie_word_embeddings": True,
            "initializer_range": INIT_STD,
            "pad_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|im_end|>"],
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 224,
            "patch_size": 14,
        },
        insert_layer_id=0,
        image_token_id=ids[PROCESSOR_TOKENS["image_token"]],
        video_token_id=ids[PROCESSOR_TOKENS["video_token"]],
        tie_word_embeddings=True,
        downsample_mode="4x",
    )
    config.initializer_range = INIT_STD

    torch.manual_seed(seed)
    model = MiniCPMOcrForConditionalGeneration(config)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if param.dim() >= 2:
                param.copy_(torch.randn(param.shape, generator=gen) * INIT_STD)
            elif name.endswith("bias"):
                param.copy_(torch.randn(param.shape, generator=gen) * 0.1)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.do_sample = False
    model.save_pretrained(tmp)

    image_processor = MiniCPMOcrImageProcessor(
        scale_resolution=112, max_slice_nums=4, patch_size=14, downsample_mode="4x", slice_mode=True
    )
    video_processor = MiniCPMOcrVideoProcessor(
        scale_resolution=112, max_slice_nums=1, patch_size=14, downsample_mode="4x"
    )
    processor = MiniCPMOcrProcessor(
        image_processor=image_processor,
        video_processor=video_processor,
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(tmp)
    # transformers v5 nests the processors in processor_config.json; the released checkpoint
    # also ships preprocessor_config.json (guide 3.4), which AutoImageProcessor reads.
    image_processor.save_pretrained(tmp)
    if not (tmp / "chat_template.jinja").is_file():
        (tmp / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    readme = (
        "Tiny randomly initialised MiniCPMOcrForConditionalGeneration for CPU tests "
        f"(ocrstack.testing.tiny_checkpoint, seed={seed}). Output is meaningless by design.\n"
    )
    (tmp / "README.md").write_text(readme, encoding="utf-8")
    if out_dir.exists():
        out_dir.rmdir()
    tmp.chmod(0o755)
    os.replace(tmp, out_dir)
    return out_dir


def main(argv: list[str] | None = None) -> int:
    """``python -m ocrstack.testing.tiny_checkpoint OUT_DIR [--seed N]``: build and print the path."""
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    print(build_tiny_minicpm_ocr(a.out_dir, a.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
