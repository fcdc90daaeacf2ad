"""What the replica fault table counts (:mod:`ocrstack.api.replicaload`; issue 23 "Done when").

Each figure is read from what the run left behind, not from the service's own claims:

* **pages lost** -- per job, its pages minus the pages in its ``NAME.blocks.json`` on the shared
  data dir (a job that did not end ``done`` loses all of them);
* **finished pages recomputed** -- from the ``page_runs`` table (one row per page computed, with
  the replica's ``boot`` and the time): a second run of a page counts unless the first was on the
  SIGKILLed replica and the page had no page-cache file when it was killed (a page in flight);
* **duplicate results** -- per job, the result recorded more than once: the ``job ID done`` lines
  over every replica's log;
* **callbacks** -- jobs whose signed callback a local receiver got (:class:`Receiver`), and the
  repeats: deliveries beyond one per job (callbacks are at least once: only those in flight on the
  SIGKILLed replica may come twice, :func:`repeats`);
* **status p99** -- ``GET /v1/jobs/{id}`` latency while jobs are parsing (:func:`p99`).
"""

from __future__ import annotations

import json
import re
import statistics
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ocrstack.api import webhooks


class Receiver:
    """A callback receiver on 127.0.0.1 counting valid signed deliveries per job id (thread server).

    Args:
        secret: the services' ``OCRSTACK_WEBHOOK_SECRET``; a delivery whose signature does not
            verify is counted in :attr:`invalid` and answered 401.
    """

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.deliveries: Counter[str] = Counter()
        self.invalid = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ok = webhooks.verify(outer.secret, self.headers, body)
                with lock:
                    if ok:
                        outer.deliveries[json.loads(body)["id"]] += 1
                    else:
                        outer.invalid += 1
                try:
                    self.send_response(200 if ok else 401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the sending replica was killed meanwhile
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/hook``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT`` (what ``api serve --webhook-host`` allows)."""
        return f"127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def cached_pages(data: Path) -> set[tuple[str, int]]:
    """``(job id, 0-based page)`` of every page-cache file under ``data/jobs`` now."""
    out = set()
    for f in (data / "jobs").glob("*/out/.ocrstack-cache/*/p*.json"):
        out.add((f.parts[-5], int(f.name[1:5]) - 1))
    return out


def pages_written(data: Path, job_id: str) -> int:
    """Pages in the job's ``*.blocks.json`` (0 when absent or unreadable)."""
    for f in (data / "jobs" / job_id / "out").glob("*.blocks.json"):
        try:
            return len(json.loads(f.read_text(encoding="utf-8")).get("pages") or [])
        except (OSError, ValueError):
            return 0
    return 0


def pages_lost(data: Path, states: dict[str, str], pages: int) -> int:
    """Pages of the jobs ``states`` (id -> final status) not in their written result."""
    return sum(pages if s != "done" else max(0, pages - pages_written(data, j)) for j, s in states.items())


def recomputed(
    runs: Iterable[tuple[str, int, str, float]], killed: str | None, cached_at_kill: set[tuple[str, int]]
) -> int:
    """Finished pages computed again, from ``(job, page, boot, at)`` rows of ``page_runs``.

    A repeated run is excused only when the run before it was on the ``killed`` boot and the page
    was not in ``cached_at_kill`` (it was in flight when the replica died); any other repeat
    recomputed a finished page.
    """
    by_page: dict[tuple[str, int], list[tuple[float, str]]] = defaultdict(list)
    for job, page, boot, at in runs:
        by_page[(job, page)].append((at, boot))
    count = 0
    for key, seq in by_page.items():
        seq.sort()
        for (_, before), _ in zip(seq, seq[1:], strict=False):
            if not (before == killed and key not in cached_at_kill):
                count += 1
    return count


def finishes(logs: Iterable[Path]) -> Counter[str]:
    """``job ID done|partial|failed in S s`` lines per job id over the replicas' logs."""
    pattern = re.compile(r"\bjob (\S+) (?:done|partial|failed) in [0-9.]+ s\b")
    out: Counter[str] = Counter()
    for log in logs:
        try:
            out.update(
                m.group(1) for m in pattern.finditer(log.read_text(encoding="utf-8", errors="replace"))
            )
        except OSError:
            continue
    return out


def duplicates(ids: Iterable[str], logged: Counter[str]) -> int:
    """Results recorded more than once: per job, its logged finishes minus one."""
    return sum(max(0, logged[j] - 1) for j in ids)


def repeats(ids: Iterable[str], delivered: Counter[str]) -> int:
    """Callbacks received beyond one per job (at-least-once deliveries seen twice)."""
    return sum(max(0, delivered[j] - 1) for j in ids)


def p99(samples: list[float]) -> float:
    """The 99th percentile of ``samples`` (ms), or nan with fewer than two."""
    return statistics.quantiles(samples, n=100)[98] if len(samples) >= 2 else float("nan")


def boot_of(log: Path) -> str | None:
    """The replica's ``boot`` (``page_runs.boot``, lease owner) from its ``worker BOOT:`` log line."""
    try:
        m = re.search(r"\bworker (\S+): \d+ thread", log.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return m.group(1) if m else None


def summary(figures: dict[str, Any]) -> str:
    """One line of a row's extra figures, ``key=value`` joined by spaces (floats to 0.1)."""
    return " ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items())
