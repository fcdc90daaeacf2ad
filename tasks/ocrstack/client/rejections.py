"""What a 4xx answer means: the server's message and the known cause and fix (guide 8, issue 3/4).

A 4xx is never retried (:mod:`ocrstack.core.retry`; the guide's SDK retried 400s silently
for 600 s, which looked like a hang): it raises ``ServerRejected`` at once with
:func:`server_message` and :func:`rejection_cause`.
"""

from __future__ import annotations

import httpx


def server_message(response: httpx.Response, limit: int = 400) -> str:
    """The error text of a non-2xx answer (``error.message``, ``detail``, ``message`` or body), one line."""
    text = ""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            text = str(err.get("message") or err)
        elif err:
            text = str(err)
        else:
            text = str(data.get("detail") or data.get("message") or data)
    if not text:
        text = response.text
    text = " ".join(text.split())
    return text[:limit] + ("..." if len(text) > limit else "")


def rejection_cause(status: int, message: str, *, model: str, image: bool = True) -> str:
    """The known cause and fix for a 4xx answer (guide 8 rows, issue 4), as a remedy string."""
    low = message.lower()
    if "pinned to" in low:
        return (
            "`transformers serve` serves one model and its name differs from --model "
            f"('{model}'): pass --model with the name in the message (guide 4.1: serve and parse names match)"
        )
    if status in (401, 403):
        return "the server wants an API key: set OPENAI_API_KEY or pass --api-key"
    if status == 404 and ("model" in low or "does not exist" in low):
        return (
            f"the server does not serve a model named '{model}': pass --model with its --served-model-name "
            f"(guide 4.1); list them with: curl --noproxy 127.0.0.1 URL/v1/models"
        )
    if status == 404:
        return "no chat-completions route at this URL: pass the server's base URL (http://host:port)"
    if status == 413:
        return "the crop is too large for the server: lower --dpi or raise the server's request size limit"
    if status == 429:
        return "the server rate-limits requests: lower --concurrency or add --server-url instances"
    if status == 400 and (
        "context length" in low or "max_model_len" in low or "maximum" in low and "token" in low
    ):
        return "prompt + max_tokens exceed the server's --max-model-len: lower --max-tokens or --dpi"
    if status == 400 and image:
        return (
            "a 400 on image requests means the vLLM server lacks --trust-request-mm-kwargs (both guide 4 "
            "profiles need it), or, for the standard server, "
            "--limit-mm-per-prompt '{\"image\": 36}' (guide 8); "
            "restart it with `ocrstack serve --profile ...`"
        )
    return "the server refused the request; read its message above (4xx are not retried, guide 8)"
