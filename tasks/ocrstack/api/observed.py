"""Per-server recognizer metrics for the service's jobs (requests, faults, latency).

:class:`ObservedRecognizer` wraps the recognizer a job uses (:class:`ocrstack.parsing.engines.Recognizer`)
and feeds the service's :class:`~ocrstack.api.metrics.Metrics` from its public hooks: ``probe`` (then
an httpx event hook per server client, timing each ``/chat/completions``), ``http_clients`` and
``stats`` (counted when the job closes it). Metrics never fail a job.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ocrstack.api.metrics import Metrics
from ocrstack.parsing.engines import Recognizer

log = logging.getLogger("ocrstack.api")


class ObservedRecognizer:
    """Proxy around a recognizer (:class:`ocrstack.parsing.engines.Recognizer`) that feeds
    per-server metrics (requests, faults, latency) from its public ``http_clients`` and ``stats``."""

    def __init__(self, inner: Recognizer, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def probe(self) -> Any:
        result = self._inner.probe()
        for url, client in self._inner.http_clients().items():
            self._hook(url, client)
        return result

    def _hook(self, url: str, client: Any) -> None:
        seconds = self._metrics.recognizer_seconds.labels(url)

        def stamp(request: Any) -> None:
            request.extensions["ocrstack_t0"] = time.perf_counter()

        def observe(response: Any) -> None:
            t0 = response.request.extensions.get("ocrstack_t0")
            if t0 is not None and response.request.url.path.endswith("/chat/completions"):
                seconds.observe(time.perf_counter() - t0)

        client.event_hooks = {"request": [stamp], "response": [observe]}

    def close(self) -> None:
        try:
            for url, s in self._inner.stats().items():
                self._metrics.recognizer_requests.labels(url).inc(s.get("done", 0))
                self._metrics.recognizer_errors.labels(url).inc(s.get("failed", 0))
        except Exception:  # metrics must never fail a job
            log.debug("recognizer stats unavailable", exc_info=True)
        self._inner.close()
