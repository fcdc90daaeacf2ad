"""Can a server really answer? ``/health`` plus one tiny real image request (guide 4.4, issue 4).

``/v1/models`` can answer before warm-up, so :func:`probe` checks ``/health`` and sends one
1-token image request through the same path as a crop. Used before the first page by
``parse`` and, repeatedly, by readiness polling (:mod:`ocrstack.client.readiness`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

from ocrstack.client.body import chat_body, tiny_png
from ocrstack.client.chat import post_chat
from ocrstack.client.http import base_url, curl_hint, make_client, short_timeout
from ocrstack.client.rejections import server_message
from ocrstack.core.errors import ServerRejected, ServerUnreachable
from ocrstack.core.retry import Transient


@dataclass(frozen=True)
class ProbeResult:
    """What :func:`probe` saw. ``health``: status of ``/health`` (None = no such route, 404)."""

    url: str
    health: int | None
    models: tuple[str, ...]
    reply: str
    seconds: float


def probe(url: str, model: str, timeout: float = 30.0, api_key: str | None = None) -> ProbeResult:
    """Check that ``url`` can really answer: ``/health``, then one tiny real image request.

    ``/v1/models`` alone is not trusted (some servers list the model before
    warm-up; ``transformers serve`` lists nothing for a local path), it is only read
    for the error message. The tiny request (64x64 white PNG, ``max_tokens: 1``)
    goes through the same path as a crop, so a server that rejects image requests
    (guide 8: missing ``--trust-request-mm-kwargs``) is caught before the first page.

    Args:
        url: server base URL (``http://127.0.0.1:18499``; a trailing ``/v1`` is accepted).
        model: served model name sent in the request (guide 4.1).
        timeout: seconds for the tiny request; connecting gives up after ``min(5, timeout)`` s.
        api_key: optional bearer token.
    Returns:
        :class:`ProbeResult`.
    Raises:
        ServerUnreachable: connection refused / timed out / ``/health`` not 200 or 404 / 5xx;
            the message has the URL and the ``curl --noproxy 127.0.0.1 URL/v1/models`` hint.
        ServerRejected: the tiny request got a 4xx (message and known cause).
    """
    base = base_url(url)
    start = time.monotonic()
    remedy = (
        f"start the server (ocrstack serve ...) or fix --server-url; check it with: {curl_hint(base)} "
        "(guide 4.4: the first start takes about 3 minutes)"
    )
    with make_client(base, timeout=timeout, api_key=api_key, connections=1) as client:
        try:
            health = client.get("/health", timeout=short_timeout(timeout))
        except httpx.TransportError as exc:
            raise ServerUnreachable(
                f"no server answers at {base} ({type(exc).__name__}: {exc})", remedy
            ) from exc
        health_status: int | None = health.status_code
        if health.status_code == 404:
            health_status = None  # no /health route (llama.cpp, SGLang and vLLM have one)
        elif health.status_code != 200:
            raise ServerUnreachable(
                f"server at {base} is not ready: /health answered HTTP {health.status_code} "
                f"({server_message(health, 200)})",
                remedy,
            )
        models: tuple[str, ...] = ()
        try:
            listed = client.get("/v1/models", timeout=min(10.0, timeout))
            if listed.status_code == 200:
                models = tuple(str(m.get("id")) for m in listed.json().get("data", []) if isinstance(m, dict))
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        body = chat_body(model, "OCR", tiny_png(), max_tokens=1)
        try:
            text, _, _ = post_chat(client, body, model)
        except ServerRejected as exc:
            if models and model not in models:
                exc.remedy = (
                    f"the server lists models {list(models)}, not '{model}': pass --model with one of them "
                    f"(guide 4.1). {exc.remedy}"
                )
                exc.args = (exc.render(),)
            raise
        except Transient as exc:
            raise ServerUnreachable(
                f"server at {base} accepted the connection but a 1-token image request failed ({exc}); "
                "it may still be warming up",
                remedy,
            ) from exc
    return ProbeResult(base, health_status, models, text, time.monotonic() - start)
