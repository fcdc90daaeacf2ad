"""The OpenAI-compatible client every verb shares (parse, serve, verify, bench).

Modules:

* :mod:`~ocrstack.client.http` -- server URLs, :func:`make_client` (short connect timeout,
  loopback bypasses environment proxies, guide 8), the ``curl`` hint (guide 4.4).
* :mod:`~ocrstack.client.body` -- chat-completions bodies and PNG data URLs (guide 5).
* :mod:`~ocrstack.client.rejections` -- a 4xx answer's message and its known cause (guide 8).
* :mod:`~ocrstack.client.chat` -- one request; faults classified by the shared retry policy
  (:mod:`ocrstack.core.retry`).
* :mod:`~ocrstack.client.probe` -- ``/health`` plus one tiny real request (guide 4.4).
* :mod:`~ocrstack.client.dispatch` -- several servers, bounded concurrency, fault tolerance
  (guide 4.1; issue 10): :mod:`~ocrstack.client.breaker` (a circuit breaker per server, a burst
  counts once) and :mod:`~ocrstack.client.routing` (least expected wait from each engine's
  ``/metrics``, issue 13).
* :mod:`~ocrstack.client.readiness` -- wait until a server answers, watching its log.
* :mod:`~ocrstack.client.metrics` -- ``/metrics`` scraping and the DSpark proof (guide 6).

The names below are re-exported so callers write ``from ocrstack.client import chat_body``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each re-exported name -> the module that defines it, imported on first use (PEP 562), so that
#: importing one light submodule (options, constants) does not load the whole package.
_HOME = {
    "BACKOFF_BASE": "ocrstack.client.defaults",
    "BACKOFF_MAX": "ocrstack.client.defaults",
    "base_url": "ocrstack.client.http",
    "chat_body": "ocrstack.client.body",
    "chat_once": "ocrstack.client.chat",
    "CHAT_PATH": "ocrstack.client.http",
    "Completion": "ocrstack.client.chat",
    "CONNECT_TIMEOUT": "ocrstack.client.http",
    "curl_hint": "ocrstack.client.http",
    "Dispatcher": "ocrstack.client.dispatch",
    "is_grey": "ocrstack.client.body",
    "JobGroup": "ocrstack.client.jobs",
    "make_client": "ocrstack.client.http",
    "png_data_url": "ocrstack.client.body",
    "post_chat": "ocrstack.client.chat",
    "probe_servers": "ocrstack.client.probe",
    "ProbeResult": "ocrstack.client.probe",
    "PROGRESS_TIMEOUT": "ocrstack.client.defaults",
    "rejection_cause": "ocrstack.client.rejections",
    "server_message": "ocrstack.client.rejections",
    "tiny_png": "ocrstack.client.body",
}


__all__ = [
    "BACKOFF_BASE",
    "BACKOFF_MAX",
    "CHAT_PATH",
    "CONNECT_TIMEOUT",
    "Completion",
    "PROGRESS_TIMEOUT",
    "Dispatcher",
    "JobGroup",
    "ProbeResult",
    "base_url",
    "chat_body",
    "chat_once",
    "curl_hint",
    "is_grey",
    "make_client",
    "png_data_url",
    "post_chat",
    "probe_servers",
    "rejection_cause",
    "server_message",
    "tiny_png",
]


def __getattr__(name: str) -> Any:
    """Import ``name``'s defining module on first access (:data:`_HOME`)."""
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
