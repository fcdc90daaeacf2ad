"""Can a server really answer? ``/health`` plus one tiny real image request (guide 4.4, issue 4).

``/v1/models`` can answer before warm-up, so :func:`probe` checks ``/health`` and sends one
1-token image request through the same path as a crop. Used before the first page by
``parse`` (:func:`probe_servers`: several servers, waiting for one that is starting up to
``--ready-timeout``, issue 10), by readiness polling (:mod:`ocrstack.client.readiness`) and, as
:func:`recheck`, by the dispatcher's breaker.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from ocrstack.client.body import chat_body, tiny_png
from ocrstack.client.chat import post_chat
from ocrstack.client.http import base_url, curl_hint, make_client, public_url, short_timeout
from ocrstack.client.rejections import server_message
from ocrstack.core import retry
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
    shown = public_url(base)  # messages never show a credential of the URL
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
                f"no server answers at {shown} ({type(exc).__name__}: {exc})", remedy
            ) from exc
        health_status: int | None = health.status_code
        if health.status_code == 404:
            health_status = None  # no /health route (llama.cpp, SGLang and vLLM have one)
        elif health.status_code != 200:
            raise ServerUnreachable(
                f"server at {shown} is not ready: /health answered HTTP {health.status_code} "
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
                f"server at {shown} accepted the connection but a 1-token image request failed ({exc}); "
                "it may still be warming up",
                remedy,
            ) from exc
    return ProbeResult(shown, health_status, models, text, time.monotonic() - start)


#: Longest wait of :func:`recheck`'s 1-token request (s).
CHECK_TIMEOUT = 60.0


def recheck(client: httpx.Client, model: str, timeout: float) -> tuple[bool, float | None]:
    """Is a server that failed back? ``/health`` (200, or 404 = no such route) and one 1-token
    image request, at most ``min(timeout, CHECK_TIMEOUT)`` s. Returns ``(ok, retry_after)``;
    a 4xx counts as ok (the server answers; real requests will show what it rejects)."""
    try:
        health = client.get("/health", timeout=short_timeout(timeout))
        if health.status_code not in (200, 404):
            return False, retry.retry_after(health) if retry.retryable_status(health.status_code) else None
        body = chat_body(model, "OCR", tiny_png(), max_tokens=1)
        post_chat(client, body, model, timeout=min(timeout, CHECK_TIMEOUT))
    except ServerRejected:
        return True, None
    except Transient as exc:
        return False, exc.retry_after
    except httpx.HTTPError:
        return False, None
    return True, None


#: Longest pause (s) between two probe rounds of servers that are starting.
PROBE_PAUSE_MAX = 5.0
#: Seconds between two "waiting for" lines on stderr.
SAY_EVERY = 10.0


def probe_servers(
    urls: Sequence[str],
    model: str,
    *,
    timeout: float = 30.0,
    api_key: str | None = None,
    ready_timeout: float = 0.0,
) -> tuple[list[ProbeResult], list[tuple[str, ServerUnreachable]]]:
    """Probe every URL in parallel; while none passes and one is starting (refused, timed out,
    503 -- anything but a DNS failure), probe again with a growing pause (0.5 s doubling to
    ``PROBE_PAUSE_MAX``) until ``ready_timeout`` s have passed, saying so on stderr every
    ``SAY_EVERY`` s.

    Returns:
        (results of the servers that passed, [(url, error)] of the others) once one passes.
    Raises:
        ServerRejected: at once (a 4xx is not a server starting).
        ServerUnreachable: none passed in time; the first server's error, with the
            ``--ready-timeout`` fix.
    """
    deadline = time.monotonic() + ready_timeout
    pause, said = 0.5, 0.0
    while True:
        with ThreadPoolExecutor(max_workers=len(urls)) as pool:
            futures = [pool.submit(probe, u, model, timeout, api_key) for u in urls]
        results: list[ProbeResult] = []
        down: list[tuple[str, ServerUnreachable]] = []
        for url, fut in zip(urls, futures, strict=True):
            try:
                results.append(fut.result())
            except ServerUnreachable as exc:
                down.append((url, exc))
        if results:
            return results, down
        starting = [(u, e) for u, e in down if not retry.name_unknown(e)]
        now = time.monotonic()
        if not starting or now + pause > deadline:
            first = down[0][1]
            waited = f" (waited {ready_timeout:g} s)" if ready_timeout > 0 and starting else ""
            raise ServerUnreachable(
                first.message + waited,
                f"{first.remedy}; pass --ready-timeout SECONDS to wait longer for a server that is starting",
            ) from first
        if now - said >= SAY_EVERY:
            said = now
            print(
                f"ocrstack: waiting for {', '.join(public_url(u) for u, _ in starting)} to get ready "
                f"({starting[0][1].message[:120]}); up to {deadline - now:.0f} s more (--ready-timeout)",
                file=sys.stderr,
            )
        time.sleep(pause)
        pause = min(pause * 2, PROBE_PAUSE_MAX)
