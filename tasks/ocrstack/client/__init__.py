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

from ocrstack.client.body import chat_body, is_grey, png_data_url, tiny_png
from ocrstack.client.chat import Completion, chat_once, post_chat
from ocrstack.client.dispatch import BACKOFF_BASE, BACKOFF_MAX, PROGRESS_TIMEOUT, Dispatcher
from ocrstack.client.http import CHAT_PATH, CONNECT_TIMEOUT, base_url, curl_hint, make_client
from ocrstack.client.jobs import JobGroup
from ocrstack.client.probe import ProbeResult, probe, probe_servers
from ocrstack.client.rejections import rejection_cause, server_message

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
    "probe",
    "probe_servers",
    "rejection_cause",
    "server_message",
    "tiny_png",
]
