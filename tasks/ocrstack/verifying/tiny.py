"""The CPU two-backend run: the tiny MiniCPM-OCR checkpoint in-process vs a real ``transformers serve``.

The checkpoint comes from :func:`ocrstack.testing.tiny_checkpoint.build_tiny_minicpm_ocr`
(cached under the work dir, rebuilt only when absent); the server is started by the function the
commands layer hands in (``VerifyOptions.tf_server``: :func:`ocrstack.serving.ephemeral.transformers_server`,
profile ``tf``, 127.0.0.1, a free port, always stopped), so verifying imports no other stage.
"""

from __future__ import annotations

import io
from pathlib import Path

from ocrstack.verifying.backends import Sample

#: The CPU sample is a plain OCR prompt: the tiny model's random weights never produce OTSL,
#: so the table rule (``</otsl>`` ending) is exercised by unit tests and on the GPU host.
TINY_PROMPT = "OCR:"


def tiny_checkpoint(work_dir: Path, seed: int = 0) -> Path:
    """Return the cached tiny checkpoint under ``work_dir`` (built on first use)."""
    from ocrstack.testing.tiny_checkpoint import build_tiny_minicpm_ocr

    target = work_dir / f"tiny-minicpm-ocr-seed{seed}"
    if not (target / "model.safetensors").is_file():
        build_tiny_minicpm_ocr(target, seed=seed)
    return target


def sample_image_png(width: int = 320, height: int = 240) -> bytes:
    """A small synthetic table-like page (PNG bytes), deterministic."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    for i in range(5):
        y = 12 + 44 * i
        draw.line([(8, y - 6), (width - 8, y - 6)], fill="black")
        draw.text((14, y), f"row {i}   {i * 7:>3}   {chr(65 + i)}{i}", fill="black")
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def tiny_sample() -> Sample:
    """The CPU sample: synthetic page + :data:`TINY_PROMPT` (not a table prompt)."""
    return Sample(sample_image_png(), TINY_PROMPT, table=False, name="synthetic page (tiny model)")
