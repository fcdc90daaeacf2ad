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

from ocrstack.client import deadline
from ocrstack.client.deadline import Watch
from ocrstack.client.http import CHAT_PATH, CONNECT_TIMEOUT, base_url, curl_hint, make_client, public_url
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


#: Largest chat-completions answer read (bytes): a ``max_tokens`` of 32k tokens is ~200 KB of JSON
#: even with every character escaped; a larger body is a broken or hostile server (issue 25 item 1:
#: a 300 MB answer froze the service), refused as it streams in, before it is parsed.
MAX_ANSWER_BYTES = 16 * 1024 * 1024


#: Headers that describe the body as it came over the wire (not the decoded body kept here).
_FRAMING = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class RequestAborted(Exception):
    """The request was stopped by :meth:`ocrstack.client.deadline.Watch.abort` (its job was cancelled)."""


def post_chat(
    client: httpx.Client,
    body: dict[str, Any],
    model: str,
    *,
    timeout: float | None = None,
    watch: Watch | None = None,
) -> tuple[str, str | None, dict[str, Any]]:
    """POST one chat request. Returns ``(text, finish_reason, usage)``.

    ``timeout``: seconds for this request (connect stays short); None uses the client's read
    timeout. It is a deadline for the whole request (connect, send, headers, body: a server that
    drips one byte at a time is cut off at it, :mod:`ocrstack.client.deadline`), enforced on
    clients made by :func:`ocrstack.client.http.make_client`. ``watch``: the deadline and abort
    switch to use instead (made from ``timeout`` when None).

    Raises:
        ServerRejected: a 4xx other than 429 (never retried).
        Transient: connection error, timeout or deadline, 5xx, 429 (with ``retry_after``), an
            unreadable 2xx body or one over :data:`MAX_ANSWER_BYTES`.
        RequestAborted: ``watch.abort()`` was called.
    """
    url = public_url(f"{client.base_url}".rstrip("/"))
    seconds = timeout if timeout is not None else client.timeout.read
    watch = watch or Watch(float(seconds) if seconds is not None else float("inf"))
    wait = httpx.Timeout(seconds, connect=min(CONNECT_TIMEOUT, seconds or CONNECT_TIMEOUT))
    try:
        with deadline.watching(watch), client.stream("POST", CHAT_PATH, json=body, timeout=wait) as streamed:
            response = _read_capped(streamed, url)
    except httpx.TransportError as exc:
        if watch.aborted:
            raise RequestAborted(f"{url}: request aborted") from exc
        if watch.expired():
            raise Transient(
                f"{url}: timed out: no complete answer within {watch.seconds:g} s (the request's deadline)"
            ) from exc
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


def _read_capped(response: httpx.Response, url: str) -> httpx.Response:
    """``response`` read whole (a new, closed response with the same status, headers and body),
    when its body is at most :data:`MAX_ANSWER_BYTES`.

    Raises:
        Transient: the body is larger (said by Content-Length or counted as it arrives).
    """
    declared = response.headers.get("content-length", "")
    too_big = Transient(f"{url}: answer larger than {MAX_ANSWER_BYTES} bytes: refused unread")
    if declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
        raise too_big
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise too_big
        chunks.append(chunk)
    # the body is decoded already: the new response must not decode it again
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _FRAMING]
    return httpx.Response(
        response.status_code, headers=headers, content=b"".join(chunks), request=response.request
    )


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
    return Completion(text, finish, public_url(base_url(url)), time.monotonic() - start, 1, usage)
