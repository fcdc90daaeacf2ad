"""The CPU two-backend run: the tiny MiniCPM-OCR checkpoint in-process vs a real ``transformers serve``.

The checkpoint comes from :func:`ocrstack.testing.tiny_checkpoint.build_tiny_minicpm_ocr`
(cached under the work dir, rebuilt only when absent); the server is started through
:mod:`ocrstack.serving.process` (profile ``tf``, 127.0.0.1, a free port) and always stopped.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def transformers_server(model_dir: Path, run_dir: Path, timeout: float = 300.0) -> Iterator[tuple[str, str]]:
    """Start ``transformers serve MODEL`` on 127.0.0.1:<free port>; yield ``(url, served model)``; stop it.

    Raises:
        ServerUnreachable / ServerRejected: the server never became ready (with the doctor's diagnosis).
    """
    from ocrstack.client.readiness import wait_ready
    from ocrstack.serving import plan, process

    port = process.free_port()
    opts = plan.ServeOptions(
        profile="tf",
        vars={"model": str(model_dir), "port": port, "host": "127.0.0.1"},
        venv=Path(sys.prefix),
        gpu="",
        run_dir=run_dir,
        offline=True,
        wait=False,
        restart=False,
    )
    lp = plan.plan(opts)
    popen = process.start(lp)
    try:
        out = wait_ready(
            lp.url, lp.served_model, timeout=timeout, log=lp.log_file, process=popen, pset=lp.pset
        )
        out.raise_for_failure()
        yield lp.url, lp.served_model
    finally:
        process.stop_pid(popen.pid, grace=20.0)
