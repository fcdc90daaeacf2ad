"""The two sides of the verbatim check (guide 7): transformers in-process and an OpenAI-compatible server.

Both get the same image (PNG bytes; the in-process side decodes exactly those bytes to RGB,
as the server does) and the same prompt, greedy decoding, thinking off
(``enable_thinking: false``, guide 4.1/5), the same ``max_new_tokens``.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Sample:
    """One verification input: PNG bytes, prompt, whether it is a table prompt (OTSL output).

    ``mm_kwargs`` are image-processor settings applied on both sides (in-process as
    ``processor_kwargs``, to vLLM as the request's ``mm_processor_kwargs``, which needs
    ``--trust-request-mm-kwargs``, guide 4), e.g. ``{"downsample_mode": "4x"}`` (guide 4.1).
    Empty = each side's default, and nothing extra is sent (``transformers serve`` answers
    422 to unknown request fields).
    """

    png: bytes
    prompt: str
    table: bool = False
    name: str = "sample"
    mm_kwargs: tuple[tuple[str, Any], ...] = ()

    def image(self):
        """The image as the server sees it: decoded from the PNG and converted to RGB."""
        from PIL import Image

        return Image.open(io.BytesIO(self.png)).convert("RGB")

    def data_url(self) -> str:
        """``data:image/png;base64,...`` for the OpenAI request."""
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass
class BackendResult:
    """What one backend produced.

    Attributes:
        backend: label, e.g. ``transformers`` or ``server http://127.0.0.1:18499``.
        prompt_tokens: tokens of the full prompt (text + vision) as the backend counts them.
        output: generated text (special tokens skipped).
        generated_tokens: number of generated tokens.
        vision_tokens: image placeholder tokens in the prompt (in-process only).
        loading: missing/unexpected/mismatched key counts (in-process only, guide 7).
        params: parameter count (in-process only).
        finish_reason: server finish reason when reported.
    """

    backend: str
    prompt_tokens: int | None = None
    output: str = ""
    generated_tokens: int | None = None
    vision_tokens: int | None = None
    loading: dict[str, int] = field(default_factory=dict)
    params: int | None = None
    finish_reason: str | None = None


def chat_messages_inprocess(sample: Sample) -> list[dict[str, Any]]:
    """Processor-format messages (image first, then the prompt), like the server builds from the request."""
    return [
        {
            "role": "user",
            "content": [{"type": "image", "image": sample.image()}, {"type": "text", "text": sample.prompt}],
        }
    ]


class TransformersBackend:
    """transformers ``generate`` in this process (guide 7 ``verify_transformers.py`` side).

    Args:
        model_dir: checkpoint directory.
        device: ``cpu``, ``cuda`` or ``auto`` (cuda when available).
        dtype: torch dtype name or ``auto`` (what ``transformers serve`` uses by default).
        attn: attention implementation (guide 7 uses ``sdpa``); None = library default.
    """

    def __init__(
        self, model_dir: Path, device: str = "auto", dtype: str = "auto", attn: str | None = None
    ) -> None:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.torch = torch
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        self.processor = AutoProcessor.from_pretrained(model_dir)
        kwargs: dict[str, Any] = {"dtype": dtype, "output_loading_info": True}
        if attn:
            kwargs["attn_implementation"] = attn
        self.model, info = AutoModelForImageTextToText.from_pretrained(model_dir, **kwargs)
        self.model.to(self.device).eval()
        self.loading = {
            k: len(v) for k, v in info.items() if k in ("missing_keys", "unexpected_keys", "mismatched_keys")
        }
        self.params = sum(p.numel() for p in self.model.parameters())
        self.image_token = getattr(self.processor.tokenizer, "image_token", None)

    def _model_kwargs(self, sample: Sample) -> dict[str, Any]:
        """The ``mm_kwargs`` the model's ``forward`` also takes (MiniCPM-OCR: ``downsample_mode``)."""
        import inspect

        accepted = inspect.signature(self.model.forward).parameters
        return {k: v for k, v in sample.mm_kwargs if k in accepted}

    def run(self, sample: Sample, max_new_tokens: int) -> BackendResult:
        """Greedy generation; returns token counts and the decoded text."""
        extra: dict[str, Any] = {"processor_kwargs": dict(sample.mm_kwargs)} if sample.mm_kwargs else {}
        inputs = self.processor.apply_chat_template(
            chat_messages_inprocess(sample),
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
            enable_thinking=False,
            **extra,
        ).to(self.device)
        ids = inputs["input_ids"]
        n_prompt = int(ids.shape[1])
        vision = None
        if self.image_token:
            tid = self.processor.tokenizer.convert_tokens_to_ids(self.image_token)
            vision = int((ids == tid).sum())
        with self.torch.no_grad():
            out = self.model.generate(
                **inputs, **self._model_kwargs(sample), max_new_tokens=max_new_tokens, do_sample=False
            )
        new = out[0, n_prompt:]
        text = self.processor.decode(new, skip_special_tokens=True)
        return BackendResult(
            "transformers (in-process generate)",
            n_prompt,
            text,
            int(new.shape[0]),
            vision,
            dict(self.loading),
            self.params,
        )


class OpenAIBackend:
    """Any OpenAI-compatible ``/v1/chat/completions``: ``transformers serve``, vLLM.

    The guide 7 ``verify_vllm.py`` side of the comparison.
    """

    def __init__(self, url: str, model: str, timeout: float = 600.0) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.timeout = timeout

    def run(self, sample: Sample, max_new_tokens: int) -> BackendResult:
        """One greedy request (temperature 0, thinking off).

        Raises:
            ServerUnreachable: connection failure or 5xx.
            ServerRejected: 4xx (not retried).
        """
        from ocrstack.client import chat_body, chat_once

        body = chat_body(self.model, sample.prompt, sample.data_url(), max_tokens=max_new_tokens)
        if sample.mm_kwargs:
            body["mm_processor_kwargs"] = dict(sample.mm_kwargs)
        answer = chat_once(self.url, body, timeout=self.timeout)
        usage = answer.usage
        return BackendResult(
            f"server {self.url} ({self.model})",
            usage.get("prompt_tokens"),
            answer.text,
            usage.get("completion_tokens"),
            finish_reason=answer.finish_reason,
        )
