"""One chat-completions request: :func:`post_chat` (classifies faults) and :func:`chat_once`.

Faults follow the shared retry policy (:mod:`ocrstack.core.retry`): connection errors,
timeouts, 5xx, 429 and unreadable 2xx bodies raise :class:`~ocrstack.core.retry.Transient`
(the caller retries or reroutes); any other 4xx raises ``ServerRejected`` at once with the
server's message and the known cause (guide 8).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from ocrstack.client.http import CHAT_PATH, CONNECT_TIMEOUT, base_url, curl_hint, make_client
from ocrstack.client.rejections import rejection_cause, server_message
from ocrstack.core import retry
from ocrstack.core.errors import ServerRejected, ServerUnreachable
from ocrstack.core.retry import Transient


@dataclass(frozen=True)
class Completion:
    """One answered request: ``text`` (content, ``""`` if null), ``finish_reason``, server, seconds."""

    text: str
    finish_reason: str | None
    server: str
    seconds: float
    attempts: int
    usage: dict[str, Any] = field(default_factory=dict)


def post_chat(
    client: httpx.Client, body: dict[str, Any], model: str, *, timeout: float | None = None
) -> tuple[str, str | None, dict[str, Any]]:
    """POST one chat request. Returns ``(text, finish_reason, usage)``.

    ``timeout``: seconds for this request (connect stays short); None uses the client's.

    Raises:
        ServerRejected: a 4xx other than 429 (never retried).
        Transient: connection error, timeout, 5xx, 429 (with ``retry_after``), or an unreadable 2xx body.
    """
    url = f"{client.base_url}".rstrip("/")
    try:
        if timeout is None:
            response = client.post(CHAT_PATH, json=body)
        else:
            wait = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout))
            response = client.post(CHAT_PATH, json=body, timeout=wait)
    except httpx.TransportError as exc:
        raise retry.from_transport(exc, url) from exc
    code = response.status_code
    if retry.retryable_status(code):
        raise retry.from_status(response, url, server_message(response, 200))
    if 400 <= code < 500:
        msg = server_message(response)
        raise ServerRejected(
            f"server {url} rejected the request with HTTP {code}: {msg}",
            rejection_cause(code, msg, model=model),
            status=code,
        )
    if code < 200 or code >= 300:
        raise Transient(f"{url}: HTTP {code}: {server_message(response, 200)}", status=code)
    try:
        data = response.json()
        choice = data["choices"][0]
        text = choice.get("message", {}).get("content") or ""
        return str(text), choice.get("finish_reason"), dict(data.get("usage") or {})
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise Transient(f"{url}: answer is not a chat completion ({exc})") from exc


def chat_once(
    url: str, body: dict[str, Any], *, timeout: float = 600.0, api_key: str | None = None
) -> Completion:
    """Send one chat-completions request to ``url`` without retries (checks, not parsing).

    Used by the DSpark ``/metrics`` proof and the two-backend check, which must see the
    server's first answer. ``body`` is usually from :func:`ocrstack.client.body.chat_body`.

    Raises:
        ServerRejected: a 4xx, with the known cause (guide 8).
        ServerUnreachable: connection error, timeout, 5xx, 429 or an answer that is not a chat completion.
    """
    start = time.monotonic()
    with make_client(url, timeout=timeout, api_key=api_key, connections=1) as client:
        try:
            text, finish, usage = post_chat(client, body, str(body.get("model", "")))
        except Transient as exc:
            raise ServerUnreachable(str(exc), f"check the server log; {curl_hint(url)}") from exc
    return Completion(text, finish, base_url(url), time.monotonic() - start, 1, usage)
