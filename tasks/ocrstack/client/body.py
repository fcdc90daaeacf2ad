"""Chat-completions request bodies and PNG data URLs (guide 5).

* Request shape: OpenAI chat completions with the crop as an ``image_url`` PNG data URL
  followed by the prompt text; ``chat_template_kwargs: {enable_thinking: false}`` in the
  body (guide 5: otherwise the output may be empty or garbled); greedy decoding
  (``temperature: 0``) by default.
* Images are sent as lossless PNG; a grey page as a one-channel PNG (same pixels, half the
  encode time).
"""

from __future__ import annotations

import base64
import io
from typing import Any

from PIL import Image, ImageChops


def is_grey(image: Image.Image, strip: int = 128) -> bool:
    """True when every pixel of an RGB ``image`` has R == G == B.

    Checked in horizontal strips of ``strip`` rows so the extra memory is a few
    hundred KB rather than several copies of a page, stopping at the first colour strip.
    """
    w, h = image.size
    for y in range(0, h, strip):
        r, g, b = image.crop((0, y, w, min(h, y + strip))).split()
        if (
            ImageChops.difference(r, g).getbbox() is not None
            or ImageChops.difference(g, b).getbbox() is not None
        ):
            return False
    return True


def png_data_url(image: Image.Image, compress_level: int = 1) -> str:
    """Encode ``image`` as ``data:image/png;base64,...`` (PNG is lossless; level 1 favours speed).

    An RGB image whose three channels are equal (a black-and-white or grey page) is
    sent as a one-channel ``L`` PNG: servers load images with ``.convert("RGB")``
    (vLLM, transformers) or three-channel decoding (llama.cpp), which gives back
    exactly the same pixels, and the encode takes about half the time.
    """
    if image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    if image.mode == "RGB" and is_grey(image):
        image = image.getchannel(0)
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=compress_level)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def tiny_png() -> str:
    """A 64x64 white PNG data URL: the image of the readiness probe's 1-token request."""
    return png_data_url(Image.new("RGB", (64, 64), "white"))


def chat_body(
    model: str,
    prompt: str,
    image_url: str,
    *,
    system: str | None = None,
    max_tokens: int = 4096,
    temperature: float = 0.0,
    enable_thinking: bool = False,
) -> dict[str, Any]:
    """Build one chat-completions request body.

    Shape: ``messages = [system?, {role: user, content: [image_url, text]}]``, the
    image before the text (MinerU prompts start with a newline for that reason);
    ``chat_template_kwargs.enable_thinking`` false by default (guide 5);
    ``temperature`` 0 = greedy decoding.
    """
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": image_url}},
                {"type": "text", "text": prompt},
            ],
        }
    )
    return {
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": False,
        "chat_template_kwargs": {"enable_thinking": enable_thinking},
    }
