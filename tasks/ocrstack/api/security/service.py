"""The service cases (:mod:`ocrstack.api.security`): one ``ocrstack api serve`` on 127.0.0.1 whose
two recognizer servers (fake OpenAI servers) are configured with a credential in their URL.

Misbehaving-recognizer jobs run one at a time while a thread asks ``/health`` every 0.1 s; the
slowest answer is in the row (the done-when: within 1 s while any single job misbehaves).
"""

from __future__ import annotations

import stat
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from PIL import Image, ImageDraw

from ocrstack.api.process import ServiceProcess
from ocrstack.api.security import Table
from ocrstack.testing.fake_openai import FakeOpenAIServer

#: The credential in the recognizer URLs; it must appear in no answer, log line or data file.
SECRET = "s3cret-in-the-url"
#: The done-when's bound on ``/health`` while a job misbehaves (s).
HEALTH_MAX = 1.0
#: Longest wait for one job (s): every case stops by itself.
JOB_LIMIT = 120.0
FINAL = ("done", "partial", "failed", "cancelled")


@contextmanager
def _health(url: str) -> Iterator[list[float]]:
    """Sample ``GET /health`` every 0.1 s until the block ends; yields the list of latencies (s)
    (an unanswered probe counts as its 10 s timeout)."""
    seconds: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        with httpx.Client(base_url=url, timeout=10, trust_env=False) as c:
            while not stop.wait(0.1):
                t0 = time.perf_counter()
                try:
                    c.get("/health")
                    seconds.append(time.perf_counter() - t0)
                except httpx.HTTPError:
                    seconds.append(10.0)

    t = threading.Thread(target=sample, name="health-sampler", daemon=True)
    t.start()
    try:
        yield seconds
    finally:
        stop.set()
        t.join(timeout=15)


def _wait(c: httpx.Client, job_id: str, limit: float = JOB_LIMIT) -> dict:
    deadline = time.monotonic() + limit
    while True:
        body = c.get(f"/v1/jobs/{job_id}").json()
        if body.get("status") in FINAL or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def _blocks(srv: FakeOpenAIServer) -> int:
    return sum(1 for r in list(srv.requests) if int(r.body.get("max_tokens") or 2) > 1)


def _until(condition: object, limit: float = 30.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


class _Run:
    """The service, its fakes, a client and every answer seen (for the secret grep)."""

    def __init__(
        self, svc: ServiceProcess, good: FakeOpenAIServer, dying: FakeOpenAIServer, png: bytes
    ) -> None:
        self.svc, self.good, self.dying, self.png = svc, good, dying, png
        self.c = httpx.Client(base_url=svc.url, timeout=30, trust_env=False)
        self.answers: list[str] = []

    def get(self, path: str, **kw: object) -> httpx.Response:
        r = self.c.get(path, **kw)  # type: ignore[arg-type]
        self.answers.append(r.text + repr(dict(r.headers)))
        return r

    def post(self, fields: dict[str, str], **kw: object) -> httpx.Response:
        r = self.c.post("/v1/jobs", files={"file": ("page.png", self.png)}, data=fields, **kw)  # type: ignore[arg-type]
        self.answers.append(r.text)
        return r

    def misbehaving_job(self, fields: dict[str, str], during: object = None) -> tuple[dict, float, float]:
        """Submit, run ``during(job_id)`` if given, wait for the end: (final status body, seconds,
        slowest /health answer in s); the job's result (JSON) is in the body as ``result``."""
        with _health(self.svc.url) as health:
            t0 = time.monotonic()
            r = self.post(fields)
            if r.status_code != 202:
                raise RuntimeError(f"submit answered {r.status_code}: {r.text[:200]}")
            job_id = r.json()["id"]
            if during is not None:
                during(job_id)  # type: ignore[operator]
            body = _wait(self.c, job_id)
            seconds = time.monotonic() - t0
        if body.get("status") in ("done", "partial"):
            body["result"] = self.get(f"/v1/jobs/{job_id}/result", params={"format": "json"}).text
        self.answers.append(repr(body))
        return body, seconds, max(health or [0.0])


def _row(body: dict, seconds: float, slowest: float, within: float) -> tuple[str, bool]:
    """Observed and held for a misbehaving job: it ended failed or partial within ``within`` s and
    ``/health`` always answered within :data:`HEALTH_MAX`."""
    state, reason = body.get("status"), (body.get("error") or "")[:90]
    observed = f"{state} after {seconds:.1f} s ({reason}); /health slowest {slowest * 1000:.0f} ms"
    return observed, state in ("failed", "partial") and seconds < within and slowest < HEALTH_MAX


def run(table: Table, root: Path) -> None:
    """Add the service cases to ``table``; data, log and inputs under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    page = Image.new("RGB", (160, 80), "white")
    ImageDraw.Draw(page).text((10, 30), "a page", fill="black")  # ink: a blank page is not read
    page.save(root / "page.png")
    good = FakeOpenAIServer().start()
    dying = FakeOpenAIServer(latency=5.0, probe_latency=0.0).start()
    try:
        urls = [s.url.replace("http://", f"http://ocr:{SECRET}@") + "/v1" for s in (good, dying)]
        args = ["--recognizer", "openai", "--layout", "none", "--concurrency", "1",
                "--server-url", urls[0], "--server-url", urls[1]]  # fmt: skip
        with ServiceProcess(root / "data", args, log=root / "service.log") as svc:
            r = _Run(svc, good, dying, (root / "page.png").read_bytes())
            try:
                _recognizer_cases(table, r)
                _request_cases(table, r)
                table.attempt("secrets and server paths", "in no answer, log line or data file; 0600/0700",
                              lambda: _no_leaks(r, root))  # fmt: skip
            finally:
                r.c.close()
    finally:
        good.stop()
        dying.stop()


def _recognizer_cases(table: Table, r: _Run) -> None:
    good = r.good.url

    def drip() -> tuple[str, bool]:
        r.good.config.drip = 0.5  # one byte every 0.5 s: an answer would take minutes
        try:
            body, s, slow = r.misbehaving_job({"server_urls": good, "request_timeout": "2", "retries": "0"})
        finally:
            r.good.config.drip = None
        return _row(body, s, slow, 30.0)

    def cancel() -> tuple[str, bool]:
        r.good.config.drip = 0.5
        try:
            seen = _blocks(r.good)
            res = r.post({"server_urls": good})
            job_id = res.json()["id"]
            if not _until(lambda: _blocks(r.good) > seen):
                return "the block request never reached the server", False
            t0 = time.monotonic()
            r.c.delete(f"/v1/jobs/{job_id}")
            freed = _until(lambda: "ocrstack_jobs_in_flight 0.0" in r.get("/metrics").text, 30.0)
            s = time.monotonic() - t0
        finally:
            r.good.config.drip = None
        return (
            f"worker free {s:.1f} s after DELETE" if freed else "worker still blocked after 30 s",
            freed and s < 5,
        )

    def huge() -> tuple[str, bool]:
        big = "x" * 20_000_000
        r.good.config.reply = lambda body, size: big if int(body.get("max_tokens") or 2) > 1 else "ok"
        try:
            body, s, slow = r.misbehaving_job({"server_urls": good, "retries": "0"})
        finally:
            r.good.config.reply = FakeOpenAIServer().config.reply
        observed, held = _row(body, s, slow, 60.0)
        refused = "larger than" in body.get("result", "")  # the block's error in blocks.json
        return f"{observed}; block error names the cap: {refused}", held and refused

    def dies() -> tuple[str, bool]:
        def kill_mid_request(_: str) -> None:
            if _until(lambda: _blocks(r.dying) >= 1):
                r.dying.kill()

        fields = {"server_urls": r.dying.url, "request_timeout": "1", "retries": "1"}
        body, s, slow = r.misbehaving_job(fields, during=kill_mid_request)
        return _row(body, s, slow, 60.0)

    table.attempt("recognizer drips 1 byte / 0.5 s (timeout 2 s)", "job ends failed/partial < 30 s; "
                  "/health < 1 s", drip)  # fmt: skip
    table.attempt("DELETE a job blocked on a dripping server", "worker free < 5 s", cancel)
    table.attempt("recognizer answers a 20 MB body", "refused unread: partial; /health < 1 s", huge)
    table.attempt("recognizer dies mid-request (timeout 1 s, retries 1)", "job ends < 60 s (not the 600 s "
                  "progress timeout); /health < 1 s", dies)  # fmt: skip


def _request_cases(table: Table, r: _Run) -> None:
    def costs() -> tuple[str, bool]:
        asks = [{"dpi": "2400", "max_pixels": "1000000000000"}, {"retries": "1000000000"},
                {"request_timeout": "nan"}, {"request_timeout": "inf"}]  # fmt: skip
        codes = [r.post(a).status_code for a in asks]
        return f"HTTP {codes}", all(c == 400 for c in codes)

    def origin() -> tuple[str, bool]:
        code = r.post({}, headers={"Origin": "http://evil.example"}).status_code
        return f"HTTP {code}", code == 403

    def host() -> tuple[str, bool]:
        code = r.get("/health", headers={"Host": "evil.example"}).status_code
        return f"HTTP {code}", code == 400

    def methods() -> tuple[str, bool]:
        for i in range(300):
            r.c.request(f"X{i:03d}", "/health")
        text = r.get("/metrics").text
        labels = {
            line.split('method="', 1)[1].split('"', 1)[0] for line in text.splitlines() if 'method="' in line
        }
        invented = sorted(m for m in labels if m.startswith("X"))
        return f"method labels {sorted(labels)}", not invented and "other" in labels

    def headers() -> tuple[str, bool]:
        h = r.get("/").headers
        csp, sniff = h.get("content-security-policy", ""), h.get("x-content-type-options", "")
        return f"CSP {csp!r}; nosniff {sniff!r}", "frame-ancestors 'none'" in csp and sniff == "nosniff"

    table.attempt("dpi 2400 / 1e12 pixels / 1e9 retries / nan, inf timeout", "400 each", costs)
    table.attempt("cross-origin POST /v1/jobs (keyless loopback)", "403", origin)
    table.attempt("Host: evil.example", "400", host)
    table.attempt("300 invented HTTP methods", "one label 'other' in /metrics", methods)
    table.attempt("security headers on the web page", "CSP frame-ancestors 'none', nosniff", headers)


def _no_leaks(r: _Run, root: Path) -> tuple[str, bool]:
    for path in ("/health", "/ready", "/metrics", "/v1/jobs", "/openapi.json"):
        r.get(path)
    data = root / "data"
    files = [p for p in data.rglob("*") if p.is_file()]
    texts = {"answers": "\n".join(r.answers), "log": (root / "service.log").read_text("utf-8", "replace")}
    texts |= {str(p.relative_to(data)): p.read_bytes().decode("utf-8", "replace") for p in files}
    leaks = [where for where, text in texts.items() if SECRET in text]
    paths = [p for p in (sys.prefix, str(data.resolve())) if p in texts["answers"]]
    loose = [
        str(p.relative_to(data)) for p in [data, *data.rglob("*")] if stat.S_IMODE(p.stat().st_mode) & 0o077
    ]
    observed = (
        f"{len(r.answers)} answers, the log, {len(files)} files: secret in {leaks or 'none'}; "
        f"server paths in answers: {paths or 'none'}; readable by others: {loose[:2] or 'none'}"
    )
    return observed, not leaks and not paths and not loose
