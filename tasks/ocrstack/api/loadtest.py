"""Bounded load/fault run of ``ocrstack api serve`` (``ocrstack api load``, ``nox -s load``).

Loopback only, tiny generated inputs (1-page PNGs, 4-page PDFs made with Pillow), the fake
OpenAI server as recognizer with ``--layout none`` (no model, little CPU), every wait bounded,
the service always stopped. Three parts, each its own fresh service and data directory:

1. ``concurrent``: ``jobs`` submissions at once; all must complete, 0 lost; meanwhile
   ``GET /v1/jobs/{id}`` latency is sampled while pages are being parsed (p99 < 100 ms).
2. ``sigkill``: multi-page jobs; SIGKILL of the server once some pages are finished, restart on
   the same data directory; every accepted job must complete and no page finished before the
   kill (its page-cache file existed) may be computed again (``page_runs`` in the database
   records each computed page with the server boot that computed it).
3. ``rss``: peak RSS (``VmHWM``) of the server after ``rss_small`` and after ``rss_big`` jobs;
   the ratio must be <= 1.2 (issue 12: memory stays flat; MinerU #4510, docling-serve #366).
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
from PIL import Image, ImageDraw

from ocrstack.api.process import ServiceProcess
from ocrstack.testing.fake_openai import FakeOpenAIServer

#: Targets from issue 12 ("Done when").
STATUS_P99_MS = 100.0
RSS_RATIO_MAX = 1.2
#: Upper bound on any single wait (seconds): the run stops by itself.
WAIT_LIMIT = 300.0


@dataclass
class LoadOptions:
    """Sizes of the run (defaults: issue 12)."""

    jobs: int = 50
    rss_small: int = 20
    rss_big: int = 200
    kill_jobs: int = 6
    kill_pages: int = 4
    latency: float = 0.05
    kill_latency: float = 0.25
    workdir: Path | None = None


@dataclass
class Row:
    check: str
    value: str
    target: str
    ok: bool


@dataclass
class LoadResult:
    """Rows of the table plus the raw figures."""

    rows: list[Row] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def table(self) -> str:
        """Plain-text table: check, measured, target, PASS/FAIL."""
        head = ("check", "measured", "target", "result")
        lines = [(r.check, r.value, r.target, "PASS" if r.ok else "FAIL") for r in self.rows]
        widths = [max(len(str(x[i])) for x in [head, *lines]) for i in range(4)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
        out += [fmt.format(*line) for line in lines]
        out.append(f"overall: {'PASS' if self.ok else 'FAIL'}")
        return "\n".join(out)

    def to_json(self) -> str:
        return json.dumps(
            {"ok": self.ok, "rows": [asdict(r) for r in self.rows], "figures": self.figures}, indent=2
        )


def _png(path: Path, text: str) -> Path:
    im = Image.new("RGB", (480, 160), "white")
    ImageDraw.Draw(im).text((20, 60), text, fill="black")
    im.save(path)
    return path


def text_pdf(path: Path, pages: int, prefix: str = "") -> Path:
    """Write an image-only PDF of ``pages`` 400 x 300 px pages, each reading ``{prefix}page N``
    (the load and replica runs' documents: one recognizer request per page with ``--layout none``)."""
    ims = [Image.new("RGB", (400, 300), "white") for _ in range(pages)]
    for i, im in enumerate(ims):
        ImageDraw.Draw(im).text((20, 40), f"{prefix}page {i + 1}", fill="black")
    ims[0].save(path, save_all=True, append_images=ims[1:])
    return path


def _submit(client: httpx.Client, path: Path, deadline: float) -> str:
    """POST /v1/jobs; on 429 wait ``Retry-After`` and try again (until ``deadline``)."""
    while True:
        r = client.post("/v1/jobs", files={"file": (path.name, path.read_bytes())})
        if r.status_code == 202:
            return r.json()["id"]
        if r.status_code != 429 or time.monotonic() > deadline:
            raise RuntimeError(f"submit failed: {r.status_code} {r.text}")
        time.sleep(float(r.headers.get("retry-after", "1")))


def _wait_all(client: httpx.Client, ids: list[str], limit: float = WAIT_LIMIT) -> dict[str, str]:
    deadline = time.monotonic() + limit
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        for job_id in ids:
            if states.get(job_id) not in ("done", "partial", "failed", "cancelled"):
                states[job_id] = client.get(f"/v1/jobs/{job_id}").json()["status"]
        if all(s in ("done", "partial", "failed", "cancelled") for s in states.values()):
            break
        time.sleep(0.2)
    return states


def _service_args(url: str, extra: tuple[str, ...] = ()) -> list[str]:
    return ["--recognizer", "openai", "--server-url", url, "--layout", "none", "--max-queue", "1000", *extra]


def _concurrent(opts: LoadOptions, root: Path, result: LoadResult) -> None:
    inputs = [_png(root / f"c{i:03d}.png", f"job {i}") for i in range(opts.jobs)]
    with (
        FakeOpenAIServer(latency=opts.latency) as fake,
        ServiceProcess(
            root / "concurrent", _service_args(fake.url, ("--concurrency", "2")), log=root / "concurrent.log"
        ) as svc,
        httpx.Client(base_url=svc.url, timeout=60, trust_env=False) as client,
    ):
        deadline = time.monotonic() + WAIT_LIMIT
        with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
            ids = list(pool.map(lambda p: _submit(client, p, deadline), inputs))
        latencies: list[float] = []
        while time.monotonic() < deadline:
            running = [client.get(f"/v1/jobs/{i}").json() for i in ids[-5:]]
            t = time.perf_counter()
            body = client.get(f"/v1/jobs/{ids[len(latencies) % len(ids)]}").json()
            latencies.append((time.perf_counter() - t) * 1000)
            if body and all(j["status"] in ("done", "partial", "failed") for j in running):
                break
        states = _wait_all(client, ids)
    done = sum(1 for s in states.values() if s == "done")
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) >= 2 else float("nan")
    result.figures.update(
        submitted=len(ids), completed=done, status_samples=len(latencies), status_p99_ms=p99
    )
    result.rows.append(
        Row(
            f"{opts.jobs} concurrent submissions",
            f"{done}/{len(ids)} done, {len(ids) - done} lost",
            "all done, 0 lost",
            done == len(ids) == opts.jobs,
        )
    )
    result.rows.append(
        Row(
            "status p99 while parsing",
            f"{p99:.1f} ms ({len(latencies)} requests)",
            f"< {STATUS_P99_MS:g} ms",
            p99 < STATUS_P99_MS,
        )
    )


def _finished_pages(data: Path) -> set[tuple[str, int]]:
    """(job id, 0-based page) of every page-cache file in the data directory."""
    out = set()
    for f in (data / "jobs").glob("*/out/.ocrstack-cache/*/p*.json"):
        out.add((f.parts[-5], int(f.name[1:5]) - 1))
    return out


def _cache_keys(data: Path) -> set[str]:
    """Settings hashes in the page-cache file names (``pNNNN-KEY.json``)."""
    return {f.stem.split("-", 1)[1] for f in data.glob("jobs/*/out/.ocrstack-cache/*/p*.json")}


def _sigkill(opts: LoadOptions, root: Path, result: LoadResult) -> None:
    data = root / "sigkill"
    pdfs = [text_pdf(root / f"k{i}.pdf", opts.kill_pages) for i in range(opts.kill_jobs)]
    total = opts.kill_jobs * opts.kill_pages
    with FakeOpenAIServer(latency=opts.kill_latency) as fake:
        args = _service_args(fake.url, ("--concurrency", "1"))
        svc = ServiceProcess(data, args, log=root / "sigkill.log").start()
        try:
            with httpx.Client(base_url=svc.url, timeout=60, trust_env=False) as client:
                deadline = time.monotonic() + WAIT_LIMIT
                ids = [_submit(client, p, deadline) for p in pdfs]
                while len(_finished_pages(data)) < total // 3 and time.monotonic() < deadline:
                    time.sleep(0.05)
            svc.kill()
        finally:
            svc.stop()
        finished = _finished_pages(data)
        keys_before = _cache_keys(data)
        first_boot = {b for _, _, b in _page_runs(data)}
        svc = ServiceProcess(data, args, log=root / "sigkill.log").start()
        try:
            with httpx.Client(base_url=svc.url, timeout=60, trust_env=False) as client:
                states = _wait_all(client, ids)
        finally:
            svc.stop()
    runs = _page_runs(data)
    after = [(j, p) for j, p, b in runs if b not in first_boot]
    recomputed = sorted(set(after) & finished)
    new_keys = _cache_keys(data) - keys_before
    note = " -- cache key changed between boots: source edited during the run?" if new_keys else ""
    done = sum(1 for s in states.values() if s == "done")
    result.figures.update(
        kill_finished_before=len(finished),
        kill_computed_after=len(after),
        kill_recomputed=len(recomputed),
        kill_completed=done,
    )
    result.rows.append(
        Row(
            "SIGKILL + restart: jobs completed",
            f"{done}/{len(ids)} ({len(finished)}/{total} pages finished before the kill)",
            "all",
            done == len(ids),
        )
    )
    result.rows.append(
        Row(
            "SIGKILL + restart: finished pages recomputed",
            f"{len(recomputed)} ({len(after)} computed after restart){note}",
            "0",
            not recomputed and len(finished) > 0 and len(after) + len(finished) >= total,
        )
    )


def _page_runs(data: Path) -> list[tuple[str, int, str]]:
    with sqlite3.connect(data / "jobs.sqlite3") as db:
        return [(j, p, b) for j, p, b in db.execute("SELECT job_id, page, boot FROM page_runs")]


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("VmHWM not in /proc/PID/status (Linux only)")


def _rss(opts: LoadOptions, root: Path, result: LoadResult) -> None:
    png = _png(root / "rss.png", "memory")
    with (
        FakeOpenAIServer(latency=0.0) as fake,
        ServiceProcess(root / "rss", _service_args(fake.url), log=root / "rss.log") as svc,
        httpx.Client(base_url=svc.url, timeout=60, trust_env=False) as client,
    ):
        deadline = time.monotonic() + WAIT_LIMIT
        peaks: dict[int, int] = {}
        submitted = 0
        for target in (opts.rss_small, opts.rss_big):
            while submitted < target:
                batch = [_submit(client, png, deadline) for _ in range(min(10, target - submitted))]
                _wait_all(client, batch)
                for job_id in batch:  # results fetched and deleted, like a real client
                    client.get(f"/v1/jobs/{job_id}/result")
                    client.delete(f"/v1/jobs/{job_id}")
                submitted += len(batch)
            peaks[target] = _peak_rss_kib(svc.pid)
    ratio = peaks[opts.rss_big] / peaks[opts.rss_small]
    result.figures.update(
        rss_small_mib=peaks[opts.rss_small] / 1024, rss_big_mib=peaks[opts.rss_big] / 1024, rss_ratio=ratio
    )
    result.rows.append(
        Row(
            f"peak RSS after {opts.rss_big} vs {opts.rss_small} jobs",
            f"{peaks[opts.rss_big] / 1024:.0f} / {peaks[opts.rss_small] / 1024:.0f} MiB = {ratio:.3f}x",
            f"<= {RSS_RATIO_MAX:g}x",
            ratio <= RSS_RATIO_MAX,
        )
    )


def run(opts: LoadOptions) -> LoadResult:
    """Run the three parts; returns the rows (every figure measured in this run)."""
    result = LoadResult()
    with tempfile.TemporaryDirectory(prefix="ocrstack-load-") as tmp:
        root = Path(opts.workdir or tmp).absolute()
        root.mkdir(parents=True, exist_ok=True)
        _concurrent(opts, root, result)
        _sigkill(opts, root, result)
        _rss(opts, root, result)
    return result
