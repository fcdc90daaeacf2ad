"""Load-aware routing: which server takes the next request (issue 13 item 2).

Each server's engine reports its own queue on ``/metrics`` (Prometheus text, read with
``prometheus_client.parser.text_string_to_metric_families``) in the gauges its back-end
declares (:attr:`ocrstack.backends.base.Backend.gauges`: vLLM's ``vllm:num_requests_running``
..., SGLang's ``sglang:num_running_reqs`` ...; the first registered back-end whose running and
waiting gauges are both present wins).

:class:`MetricsPoller` scrapes every server each ``interval`` s (bounded timeout, one daemon
thread per server). :func:`score` is the expected wait of one more request in service times,
``(others' requests + ours in flight + 1) / capacity`` -- MinerU's ``mineru-router`` picks the
lowest "queued + processing per capacity" over its own requests; here the queue is the
engine's, so requests of other clients count too -- raised to the KV-cache use (0..1) when
that is higher. A server whose metrics cannot be read (no ``/metrics``: llama.cpp without
``--metrics``, ``transformers serve``; stale or unparsable) counts only our in-flight requests.

Capacity: ``http://host:port#capacity=N`` on a ``--server-url`` (the server's ``--max-num-seqs``);
without it, ``--concurrency``. It is also the most requests ocrstack keeps in flight there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ocrstack.backends import registry
from ocrstack.core.errors import UsageError

#: Seconds between two scrapes of one server's ``/metrics``.
POLL_INTERVAL = 0.5
#: Seconds to wait for one scrape (a busy server must not hold the poller).
POLL_TIMEOUT = 1.0
#: Seconds between scrapes of a server without ``/metrics`` (404 or no known gauge).
ABSENT_INTERVAL = 10.0


@dataclass(frozen=True)
class Load:
    """One scrape of an engine's queue.

    Attributes:
        engine: the back-end whose gauges were found (``vllm``, ``sglang``, ...).
        running, waiting: requests generating / queued (every client), summed over engines.
        cache: KV-cache (vLLM) or token (SGLang) use in 0..1, the highest engine's; None if absent.
        at: ``time.monotonic()`` of the scrape.
        own: our requests in flight to this server when the scrape was taken.
    """

    engine: str
    running: float
    waiting: float
    cache: float | None
    at: float = 0.0
    own: int = 0


def parse_load(text: str) -> Load | None:
    """The queue gauges in a ``/metrics`` body, or None when no registered back-end's are there.

    Raises nothing: an unparsable body is None (the server then counts as without metrics).
    """
    values: dict[str, list[float]] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                values.setdefault(sample.name, []).append(float(sample.value))
    except (ValueError, TypeError, IndexError):
        return None
    for backend in registry.backends():
        g = backend.gauges
        if g is not None and g.running in values and g.waiting in values:
            cache = next((max(values[c]) for c in g.cache if c in values), None)
            return Load(backend.name, sum(values[g.running]), sum(values[g.waiting]), cache)
    return None


def split_capacity(url: str) -> tuple[str, int | None]:
    """``http://h:p#capacity=8`` -> ``("http://h:p", 8)``; no fragment -> ``(url, None)``.

    Raises:
        UsageError: a fragment other than ``capacity=N`` with N >= 1.
    """
    parts = urlsplit(url.strip())
    if not parts.fragment:
        return url.strip(), None
    query = parse_qs(parts.fragment)
    values = query.get("capacity", [])
    if set(query) != {"capacity"} or len(values) != 1 or not values[0].isdigit() or int(values[0]) < 1:
        raise UsageError(
            f"server URL '{url}': unknown fragment '#{parts.fragment}'",
            "write it as --server-url http://HOST:PORT#capacity=N (N >= 1: the server's max-num-seqs)",
        )
    return parts._replace(fragment="").geturl(), int(values[0])


def foreign(load: Load | None) -> float:
    """Requests of other clients on the engine (its queue minus ours at the scrape), >= 0."""
    if load is None:
        return 0.0
    return max(0.0, load.running + load.waiting - load.own)


def score(load: Load | None, own: int, capacity: int) -> float:
    """Expected wait of one more request, in service times: ``(foreign + own + 1) / capacity``,
    at least the cache use (a nearly full KV cache preempts). ``load`` None: in-flight counting."""
    value = (foreign(load) + own + 1) / capacity
    if load is not None and load.cache is not None:
        value = max(value, load.cache)
    return value


class MetricsPoller:
    """Scrape ``/metrics`` of several servers in the background (one daemon thread each).

    ``targets`` are ``(url, inflight)`` with ``inflight()`` giving our requests in flight there
    now; each server gets its own one-connection client (``make_client(url)``: a full request
    pool must not delay a scrape); :meth:`load` returns the latest fresh :class:`Load` of a URL or
    None (never read, absent, failed, or older than ``3 * interval`` s). ``on_update`` is called
    after each scrape (the dispatcher re-routes).
    """

    def __init__(
        self,
        targets: list[tuple[str, Callable[[], int]]],
        *,
        make_client: Callable[[str], httpx.Client],
        interval: float = POLL_INTERVAL,
        timeout: float = POLL_TIMEOUT,
        on_update: Callable[[], None] | None = None,
    ) -> None:
        self.interval = interval
        self.timeout = timeout
        self._loads: dict[str, Load | None] = {url: None for url, _ in targets}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._on_update = on_update or (lambda: None)
        self.scrapes: dict[str, int] = {url: 0 for url, _ in targets}
        self._threads = [
            threading.Thread(
                target=self._poll, args=(url, make_client(url), own), name=f"ocr-metrics-{url}", daemon=True
            )
            for url, own in targets
        ]
        for thread in self._threads:
            thread.start()

    def load(self, url: str) -> Load | None:
        """The latest load of ``url`` if younger than ``3 * interval`` s, else None."""
        with self._lock:
            current = self._loads.get(url)
        if current is None or time.monotonic() - current.at > 3 * self.interval:
            return None
        return current

    def close(self) -> None:
        """Stop polling (threads end within one timeout)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.timeout + 1)

    def _scrape(self, client: httpx.Client, own: Callable[[], int]) -> tuple[Load | None, bool]:
        """(load, absent): absent when the server answers but has no known gauges."""
        before = own()
        try:
            response = client.get("/metrics", timeout=httpx.Timeout(self.timeout))
        except httpx.HTTPError:
            return None, False
        if response.status_code != 200:
            return None, response.status_code == 404
        load = parse_load(response.text)
        if load is None:
            return None, True
        mine = min(before, own())  # ours the engine may have counted (an extra one would hide load)
        return Load(load.engine, load.running, load.waiting, load.cache, time.monotonic(), mine), False

    def _poll(self, url: str, client: httpx.Client, own: Callable[[], int]) -> None:
        with client:
            while not self._stop.is_set():
                load, absent = self._scrape(client, own)
                with self._lock:
                    self._loads[url] = load
                    self.scrapes[url] += 1
                self._on_update()
                self._stop.wait(ABSENT_INTERVAL if absent else self.interval)
