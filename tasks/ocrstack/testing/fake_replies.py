"""Answers of the fake OpenAI server (:mod:`ocrstack.testing.fake_openai`): PNG sizes, a chat body's
image URLs and prompt, the default echo reply, replayed answers by prompt, and ``/metrics`` text in
a back-end's gauge names."""

from __future__ import annotations

import base64
import struct
import time
from collections.abc import Callable
from typing import Any

from ocrstack.backends import registry


def png_size(data_url: str) -> tuple[int, int] | None:
    """Width/height from a ``data:image/png;base64,...`` URL (reads the IHDR chunk only), or None."""
    if not data_url.startswith("data:image/png;base64,"):
        return None
    head = base64.b64decode(data_url[len("data:image/png;base64,") :][:44])
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def _default_reply(body: dict[str, Any], size: tuple[int, int] | None) -> str:
    prompt = ""
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, list):
            prompt += "".join(p.get("text", "") for p in content if p.get("type") == "text")
    dims = f"{size[0]}x{size[1]}" if size else "noimage"
    return f"[{dims}] {prompt.strip()}"


def image_urls(body: dict[str, Any]) -> list[str]:
    """The ``image_url`` URLs of a chat body's messages, in order (``[]`` for text-only requests)."""
    return [
        part["image_url"]["url"]
        for msg in body.get("messages", [])
        for part in (msg.get("content") if isinstance(msg.get("content"), list) else [])
        if part.get("type") == "image_url"
    ]


def request_prompt(body: dict[str, Any]) -> str:
    """The text parts of the last user message of a chat body, joined and stripped."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if p.get("type") == "text").strip()
    return str(content or "").strip()


def prompt_replay(
    answers: dict[str, str], default: str | None = None
) -> Callable[[dict[str, Any], tuple[int, int] | None], str]:
    """A ``reply`` that answers by prompt: ``answers`` maps a prompt (compared stripped, e.g.
    ``"Layout Detection:"``) to the recorded answer; an unknown prompt gets ``default`` or, when
    None, the default ``"[WxH] prompt"`` echo."""
    table = {k.strip(): v for k, v in answers.items()}

    def reply(body: dict[str, Any], size: tuple[int, int] | None) -> str:
        prompt = request_prompt(body)
        if prompt in table:
            return table[prompt]
        return default if default is not None else _default_reply(body, size)

    return reply


def metrics_text(engine: str, running: float, waiting: float, kv: float, model: str) -> str:
    """Prometheus text in back-end ``engine``'s gauge names for the three load gauges.

    Names and labels: the back-end's :attr:`~ocrstack.backends.base.Backend.gauges` (vLLM
    ``vllm/v1/metrics/loggers.py`` with labels ``engine`` and ``model_name``; SGLang
    ``python/sglang/srt/metrics/collector.py`` with ``model_name``); the first cache name is used,
    ``model_name`` is ``model`` and any other label ``"0"``.

    Raises:
        ConfigError: ``engine`` is not a registered back-end.
        ValueError: the back-end has no ``/metrics`` gauges.
    """
    gauges = registry.get(engine).gauges
    if gauges is None:
        raise ValueError(f"back-end {engine!r} serves no /metrics gauges")
    labels = ",".join(f'{k}="{model}"' if k == "model_name" else f'{k}="0"' for k in gauges.labels)
    lines = []
    for name, value in zip(
        (gauges.running, gauges.waiting, gauges.cache[0]), (running, waiting, kv), strict=True
    ):
        lines += [f"# HELP {name} {name}", f"# TYPE {name} gauge", f"{name}{{{labels}}} {float(value)}"]
    return "\n".join(lines) + "\n"


class Drip:
    """A writer that sends one byte every ``seconds`` s (a server that never finishes an answer)."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self.inner, self.seconds = inner, seconds

    def write(self, data: bytes) -> int:
        for i in range(len(data)):
            self.inner.write(data[i : i + 1])
            self.inner.flush()
            time.sleep(self.seconds)
        return len(data)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()

    @property
    def closed(self) -> bool:
        return bool(self.inner.closed)


def drip(handler: Any) -> None:
    """When ``handler.drip`` (seconds per byte) is set, its answer goes out through :class:`Drip` on
    a connection closed afterwards (the next request on it must not drip too)."""
    if getattr(handler, "drip", None):
        handler.wfile = Drip(handler.wfile, handler.drip)
        handler.close_connection = True
