"""Prometheus metrics of the service (prometheus_client), one registry per app.

Names follow the Prometheus naming guide (https://prometheus.io/docs/practices/naming/):
``ocrstack_`` prefix, base units (``_seconds``), ``_total`` for counters. ``ocrstack_queue_depth``
is the name the Kubernetes HPA manifests scale on (issue 13); keep it.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

#: Page stage latency buckets (seconds): a fake recognizer page takes ~10 ms, a VLM page minutes.
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
#: Stage labels of ``ocrstack_page_stage_seconds``: ``render`` (PDF/image to pixels), then every
#: stage the pipeline times per page (``PageResult.timings``: ``orient``, ``layout``,
#: ``recognition``, ... and ``total``), and per document ``assembly`` (from the last computed page
#: to the written, validated NAME.md + blocks.json).


class _JobStates:
    """Collector reading job counts from the store at scrape time (always current after a restart)."""

    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self.counts = counts

    def collect(self):  # prometheus_client collector protocol
        counts = self.counts()
        jobs = GaugeMetricFamily("ocrstack_jobs", "Jobs in the store by state", labels=["state"])
        for state, n in counts.items():
            jobs.add_metric([state], n)
        yield jobs
        yield GaugeMetricFamily(
            "ocrstack_queue_depth", "Jobs waiting to start (queued)", value=counts["queued"]
        )


class Metrics:
    """All metrics of one app; ``registry`` is what ``GET /metrics`` exposes."""

    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter(
            "ocrstack_http_requests_total",
            "HTTP requests by route and status",
            ["method", "route", "status"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "ocrstack_http_request_duration_seconds",
            "HTTP request latency by route",
            ["method", "route"],
            registry=r,
        )
        self.in_flight = Gauge("ocrstack_http_requests_in_flight", "HTTP requests being answered", registry=r)
        self.jobs_running = Gauge("ocrstack_jobs_in_flight", "Jobs being parsed now", registry=r)
        self.pages_in_flight = Gauge("ocrstack_pages_in_flight", "Pages being parsed now", registry=r)
        self.jobs_finished = Counter(
            "ocrstack_jobs_finished_total", "Jobs that reached a final state", ["state"], registry=r
        )
        self.callbacks = Counter(
            "ocrstack_callbacks_total",
            "Job callbacks this replica recorded, by outcome (delivered, failed)",
            ["state"],
            registry=r,
        )
        self.pages = Counter(
            "ocrstack_pages_processed_total",
            "Pages finished, computed or from the page cache",
            ["source"],
            registry=r,
        )
        self.page_failures = Counter("ocrstack_page_failures_total", "Pages that failed", registry=r)
        self.stage_seconds = Histogram(
            "ocrstack_page_stage_seconds",
            "Per-stage latency of one page (assembly: per document)",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        self.recognizer_requests = Counter(
            "ocrstack_recognizer_requests_total",
            "Requests answered by each recognizer server",
            ["server"],
            registry=r,
        )
        self.recognizer_errors = Counter(
            "ocrstack_recognizer_errors_total",
            "Faults (connection errors, timeouts, 5xx) per server",
            ["server"],
            registry=r,
        )
        self.recognizer_seconds = Histogram(
            "ocrstack_recognizer_request_seconds",
            "Recognizer request latency (until the answer's headers)",
            ["server"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        r.register(_JobStates(counts))
