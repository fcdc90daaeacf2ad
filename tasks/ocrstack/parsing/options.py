"""Typed options for ``ocrstack parse``, with every default in one place.

Precedence: these defaults < environment (``OCR_LAYOUT_MODEL_DIR``) < CLI flags.
The served model name and port default to ``envs/versions.yaml`` (guide 4.1:
the name must match the server's ``--served-model-name``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.core.endpoints import default_model, default_server_url


@dataclass(frozen=True)
class ParseOptions:
    """Everything ``ocrstack parse`` needs; built by the CLI, passed to :mod:`ocrstack.parsing.pipeline`.

    Attributes:
        inputs: files or directories (relative paths resolved against the cwd by the CLI).
        output: output directory; one ``NAME.md`` + ``NAME.blocks.json`` per input.
        pages: 1-based page selection like ``"1-3,7"``; None = all pages.
        dpi: PDF render resolution in dots per inch.
        layout: layout provider kind (see :mod:`ocrstack.parsing.layout`).
        layout_model: checkpoint / inference dir for model-backed layout providers.
        recognizer: recognizer kind (see :mod:`ocrstack.parsing.recognition`).
        server_urls: OpenAI-compatible endpoints for ``recognizer="openai"``.
        model: served model name sent in each request.
        prompts: prompt set name (``minicpm-ocr``, ``mineru-diffusion``) or a YAML file path.
        concurrency: in-flight requests per server.
        limit: parse at most this many pages per input (guide 5: try one page first).
        password: PDF user password.
        force: overwrite existing outputs.
        keep_paratext: keep header/footer/page-number blocks.
        save_layout_images: write per-page layout overlay PNGs.
        request_timeout: seconds per HTTP request.
        retries: retries for connection errors / timeouts / 5xx (never for 4xx, guide 8).
        max_tokens: generation cap per block.
        max_pixels: pixel budget per rendered page; larger pages are downscaled.
        api_key: optional bearer token for ``recognizer="openai"`` (``--api-key``; else
            ``$OPENAI_API_KEY``). Excluded from ``repr`` and never written to outputs or logs.
    """

    inputs: tuple[Path, ...]
    output: Path = Path("out")
    pages: str | None = None
    dpi: int = 200
    layout: str = "rapid-layout"
    layout_model: Path | None = None
    recognizer: str = "rapidocr"
    server_urls: tuple[str, ...] = field(default_factory=lambda: (default_server_url(),))
    model: str = field(default_factory=default_model)
    prompts: str = "minicpm-ocr"
    concurrency: int = 4
    limit: int | None = None
    password: str | None = None
    force: bool = False
    keep_paratext: bool = False
    save_layout_images: bool = False
    request_timeout: float = 600.0
    retries: int = 3
    max_tokens: int = 4096
    max_pixels: int = 40_000_000
    api_key: str | None = field(default=None, repr=False)
