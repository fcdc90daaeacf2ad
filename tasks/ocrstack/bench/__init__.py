"""``ocrstack bench``: client overhead, multi-endpoint scaling, memory streaming and embedded speed (issue 3).

Every figure comes from running the real ``ocrstack parse`` pipeline
(:func:`ocrstack.parsing.pipeline.run`) on PDFs generated with pypdfium2 (US-letter pages,
40 lines of Helvetica text each). The OpenAI-compatible endpoints are
:mod:`ocrstack.testing.fake_openai` servers in their own processes on 127.0.0.1,
each answering after a fixed simulated latency and generating one request at a
time (``--max-concurrent 1``, like vLLM ``--max-num-seqs 1``, guide 4.1). Their
1-token readiness probe answers without the latency (a real server has no decode
phase for it).

Rows (targets from issue 3; the benchmark reports, it does not assert):

* ``client overhead``: ``(T - N*L) / T`` for N pages through one endpoint with
  server time L per page (L = 0.8 s): the share of end-to-end time T not spent
  in the server: render, crop, PNG encode, request build, assembly, writing.
  Target < 5 %. Measured with the default ``--concurrency`` (pages overlap) and,
  for information, with ``--concurrency 1`` (nothing overlaps).
* ``render`` / ``encode+request``: client CPU per page, measured in-process.
* ``throughput N endpoints``: pages/s with 1, 2, 4, 8 endpoints, 12 pages per endpoint
  (about 10 s of server time, so the staggered start of N servers is a small part);
  target >= 0.9 x N x the single-endpoint figure.
* ``peak RSS``: peak resident memory (VmHWM) of a child process parsing a 10-page and a 300-page
  PDF (zero-latency endpoint); target: 300-page <= 1.2 x 10-page (pages streamed).
* ``embedded pages/s``: the default ``rapid-layout`` + ``rapidocr`` pipeline on CPU.

Run: ``ocrstack bench`` (a few minutes on 2 cores), ``ocrstack bench --quick``
(smoke run, seconds, smaller figures that are not comparable with the targets),
``--json`` for machine-readable output.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ocrstack.core import proc
from ocrstack.core.errors import OcrstackError, StepFailed

#: Targets from issue 3.
OVERHEAD_TARGET = 0.05
SCALING_TARGET = 0.9
RSS_TARGET = 1.2


@dataclass(frozen=True)
class BenchOptions:
    """Benchmark settings; ``quick()`` gives the smoke-run values.

    Attributes:
        latency: simulated server seconds per page request (issue 3: 0.8).
        overhead_pages: pages for the client-overhead rows.
        endpoints: endpoint counts for the scaling rows.
        pages_per_endpoint: pages per endpoint in the scaling runs.
        rss_pages: page counts for the peak-RSS rows: base, [middle...,] compared (last).
        embedded_pages: pages parsed by the embedded default (rapidocr).
        concurrency: ``--concurrency`` of the pipelined runs (ParseOptions default).
        dpi: render resolution.
        embedded: run the embedded-default row (needs rapidocr + rapid-layout).
        workdir: where PDFs, logs and outputs go (default: a temporary directory).
    """

    latency: float = 0.8
    overhead_pages: int = 20
    endpoints: tuple[int, ...] = (1, 2, 4, 8)
    pages_per_endpoint: int = 12
    rss_pages: tuple[int, ...] = (10, 100, 300)
    embedded_pages: int = 3
    concurrency: int = 4
    dpi: int = 200
    embedded: bool = True
    workdir: Path | None = None
    quick_mode: bool = False

    @classmethod
    def quick(cls, **kw: object) -> BenchOptions:
        """Smoke-run settings: short latency, few pages, 1 and 2 endpoints."""
        base = cls(
            latency=0.05,
            overhead_pages=4,
            endpoints=(1, 2),
            pages_per_endpoint=3,
            rss_pages=(3, 12),
            embedded_pages=1,
            quick_mode=True,
        )
        return replace(base, **kw)  # type: ignore[arg-type]


@dataclass
class Row:
    """One line of the table. ``verdict``: ``meets`` / ``misses`` / ``info`` / ``not-run``."""

    metric: str
    value: float | None
    unit: str
    target: str = ""
    verdict: str = "info"
    detail: str = ""


@dataclass
class BenchResult:
    """All rows plus the settings they were measured with."""

    options: dict[str, object]
    rows: list[Row] = field(default_factory=list)

    def to_json(self) -> str:
        """``{"options": {...}, "rows": [{metric, value, unit, target, verdict, detail}, ...]}``."""
        return json.dumps(
            {"options": self.options, "rows": [asdict(r) for r in self.rows]}, indent=2, default=str
        )

    def to_text(self) -> str:
        """A fixed-width table, one row per figure."""
        head = ("metric", "value", "unit", "target", "verdict", "detail")
        body = [
            (r.metric, "-" if r.value is None else f"{r.value:.4g}", r.unit, r.target, r.verdict, r.detail)
            for r in self.rows
        ]
        widths = [max(len(str(x[i])) for x in [head, *body]) for i in range(5)]
        lines = []
        for cols in [head, *body]:
            lines.append(
                "  ".join(str(c).ljust(w) for c, w in zip(cols[:5], widths, strict=True)) + "  " + cols[5]
            )
        lines.insert(1, "-" * (sum(widths) + 2 * 5 + 6))
        return "\n".join(lines)


# ------------------------------------------------------------------------------------ inputs


def make_pdf(path: Path, pages: int, lines: int = 40) -> Path:
    """Write a ``pages``-page US-letter PDF with ``lines`` lines of Helvetica text per page (pypdfium2)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    try:
        for i in range(pages):
            page = pdf.new_page(612, 792)
            for ln in range(lines):
                obj = raw.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 11.0)
                text = f"Page {i + 1} line {ln + 1}: the quick brown fox jumps over the lazy dog 0123456789."
                buf = (ctypes.c_ushort * (len(text) + 1))(*[ord(c) for c in text], 0)
                raw.FPDFText_SetText(obj, buf)
                raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 56, 740 - ln * 17)
                raw.FPDFPage_InsertObject(page.raw, obj)
            raw.FPDFPage_GenerateContent(page.raw)
            page.close()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.pdf")
        pdf.save(tmp)
    finally:
        pdf.close()
    os.replace(tmp, path)
    return path


class Fleet:
    """``n`` fake OpenAI servers, each in its own process on 127.0.0.1 (stopped by pid on exit)."""

    def __init__(self, n: int, latency: float, logdir: Path, max_concurrent: int | None = 1) -> None:
        self.n, self.latency, self.logdir, self.max_concurrent = n, latency, logdir, max_concurrent
        self.procs: list[subprocess.Popen[bytes]] = []
        self.urls: list[str] = []

    def __enter__(self) -> Fleet:
        try:
            logs = []
            for i in range(self.n):
                log = self.logdir / f"fake-{os.getpid()}-{time.monotonic_ns()}-{i}.log"
                argv = [
                    sys.executable,
                    "-m",
                    "ocrstack.testing.fake_openai",
                    "--port",
                    "0",
                    "--latency",
                    str(self.latency),
                    "--probe-latency",
                    "0",
                ]
                if self.max_concurrent:
                    argv += ["--max-concurrent", str(self.max_concurrent)]
                self.procs.append(proc.spawn(argv, log=log))
                logs.append(log)
            for p, log in zip(self.procs, logs, strict=True):
                self.urls.append(_wait_ready(p, log))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)


def _wait_ready(p: subprocess.Popen[bytes], log: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        for line in text.splitlines():
            if line.startswith("READY "):
                return line.split()[1]
        if p.poll() is not None:
            raise StepFailed(
                f"fake OpenAI server exited with {p.returncode}; log: {log}",
                "read the log",
                returncode=p.returncode,
            )
        time.sleep(0.05)
    raise StepFailed(f"fake OpenAI server not ready after {timeout:.0f} s; log: {log}", "read the log")


def _parse_options(pdf: Path, out: Path, urls: Sequence[str], concurrency: int, dpi: int, **kw: object):  # noqa: ANN202
    """ParseOptions for a bench run; ``out`` is emptied first so the resume cache cannot serve old pages."""
    from ocrstack.parsing.options import ParseOptions

    shutil.rmtree(out, ignore_errors=True)

    base: dict[str, object] = dict(
        inputs=(pdf,),
        output=out,
        layout="none",
        recognizer="openai",
        server_urls=tuple(urls),
        concurrency=concurrency,
        force=True,
        dpi=dpi,
        retries=1,
        request_timeout=120.0,
    )
    base.update(kw)
    return ParseOptions(**base)  # type: ignore[arg-type]


def _run_pipeline(options) -> tuple[float, object]:  # noqa: ANN001
    """Run ``parsing.pipeline.run`` quietly; returns (seconds, summary); tolerates a validation failure."""
    from ocrstack.core.errors import CheckFailed
    from ocrstack.parsing import pipeline

    start = time.perf_counter()
    try:
        summary = pipeline.run(options, progress=False, echo=lambda _s: None)
    except CheckFailed:
        summary = None
    return time.perf_counter() - start, summary


# ------------------------------------------------------------------------------------ rows


def _warm_imports() -> None:
    """Import the pipeline's modules before timing: interpreter start-up is not per-page overhead."""
    import ocrstack.parsing.layout.whole_page  # noqa: F401
    import ocrstack.parsing.pipeline  # noqa: F401
    import ocrstack.parsing.recognition.openai  # noqa: F401


def _overhead_rows(opts: BenchOptions, work: Path) -> list[Row]:
    _warm_imports()
    pdf = make_pdf(work / f"doc-{opts.overhead_pages}.pdf", opts.overhead_pages)
    rows = []
    server_s = opts.overhead_pages * opts.latency
    with Fleet(1, opts.latency, work) as fleet:
        for conc, label in ((opts.concurrency, f"concurrency {opts.concurrency}"), (1, "concurrency 1")):
            t, _ = _run_pipeline(_parse_options(pdf, work / f"out-ovh-{conc}", fleet.urls, conc, opts.dpi))
            frac = max(0.0, (t - server_s) / t)
            main = conc == opts.concurrency
            rows.append(
                Row(
                    f"client overhead ({label})",
                    round(100 * frac, 2),
                    "% of e2e",
                    f"< {OVERHEAD_TARGET:.0%}" if main else "",
                    ("meets" if frac < OVERHEAD_TARGET else "misses") if main else "info",
                    f"{opts.overhead_pages} pages, e2e {t:.2f} s vs server {server_s:.2f} s "
                    f"({1000 * (t - server_s) / opts.overhead_pages:.0f} ms/page not hidden)",
                )
            )
    rows.extend(_client_cpu_rows(pdf, opts))
    return rows


def _client_cpu_rows(pdf: Path, opts: BenchOptions) -> list[Row]:
    """Per-page client CPU, in-process: render (documents.iter_pages), crop+PNG+base64+JSON."""
    from ocrstack.parsing import documents
    from ocrstack.parsing.layout.whole_page import WholePage
    from ocrstack.parsing.recognition.openai import OpenAIRecognizer, RecognizerSettings

    rec = OpenAIRecognizer(RecognizerSettings(server_urls=("http://127.0.0.1:9",), model="minicpm-ocr"))
    render = encode = 0.0
    n = 0
    it = documents.iter_pages(pdf, dpi=opts.dpi)
    try:
        while True:
            t0 = time.perf_counter()
            try:
                page = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            bodies = rec.build_requests(page, WholePage().detect(page))
            for _, body in bodies:
                json.dumps(body)
            t2 = time.perf_counter()
            render += t1 - t0
            encode += t2 - t1
            n += 1
    finally:
        it.close()
    return [
        Row("render per page", round(1000 * render / n, 1), "ms", detail=f"{opts.dpi} DPI, {n} pages"),
        Row(
            "crop+encode+request per page",
            round(1000 * encode / n, 1),
            "ms",
            detail="whole-page crop, PNG level 1, base64, JSON",
        ),
    ]


def _scaling_rows(opts: BenchOptions, work: Path) -> list[Row]:
    rows = []
    single: float | None = None
    for n in opts.endpoints:
        pages = opts.pages_per_endpoint * n
        pdf = make_pdf(work / f"doc-{pages}.pdf", pages)
        with Fleet(n, opts.latency, work) as fleet:
            t, _ = _run_pipeline(
                _parse_options(pdf, work / f"out-scale-{n}", fleet.urls, opts.concurrency, opts.dpi)
            )
        thr = pages / t
        if n == opts.endpoints[0]:
            single = thr / n
        ratio = thr / (n * single) if single else None
        ideal = n / opts.latency
        rows.append(
            Row(
                f"throughput {n} endpoint{'s' if n > 1 else ''}",
                round(thr, 3),
                "pages/s",
                f">= {SCALING_TARGET} x {n} x single" if n > 1 else "",
                ("meets" if ratio is not None and ratio >= SCALING_TARGET else "misses") if n > 1 else "info",
                f"{pages} pages in {t:.2f} s; {ratio:.2f} x N x single; "
                f"server-bound ideal {ideal:.2f} pages/s"
                if ratio is not None
                else f"{pages} pages in {t:.2f} s",
            )
        )
    return rows


def _rss_rows(opts: BenchOptions, work: Path) -> list[Row]:
    """Peak RSS per page count; the first count is the base, the last is compared with it (target),
    counts in between are shown for the shape of the curve (bounded vs growing with pages)."""
    counts = list(opts.rss_pages)
    res = {}
    with Fleet(1, 0.0, work, max_concurrent=None) as fleet:
        for n in counts:
            pdf = make_pdf(work / f"doc-{n}.pdf", n)
            argv = [
                sys.executable,
                "-m",
                "ocrstack.bench",
                "--rss-child",
                str(pdf),
                str(work / f"out-rss-{n}"),
                fleet.urls[0],
                str(opts.dpi),
                str(opts.concurrency),
            ]
            cp = proc.run(argv, capture=True, echo=False, timeout=1800)
            res[n] = json.loads(cp.stdout.strip().splitlines()[-1])
    base, last = counts[0], counts[-1]
    rows = []
    for n in counts:
        ratio = res[n]["maxrss_kib"] / res[base]["maxrss_kib"]
        target = n == last
        rows.append(
            Row(
                f"peak RSS {n} pages",
                round(res[n]["maxrss_kib"] / 1024, 1),
                "MiB",
                f"<= {RSS_TARGET} x {base}-page" if target else "",
                ("meets" if ratio <= RSS_TARGET else "misses") if target else "info",
                f"{ratio:.3f} x the {base}-page run; {res[n]['seconds']:.1f} s; child VmHWM, "
                f"zero-latency endpoint, --concurrency {opts.concurrency}",
            )
        )
    return rows


def peak_rss_kib() -> int:
    """Peak resident set size of this process in KiB.

    Linux: ``VmHWM`` from ``/proc/self/status``. ``ru_maxrss`` is not used there because
    it survives ``exec``: a child forked from a large parent (this benchmark after the
    8-endpoint run) reports the parent's size. Elsewhere: ``ru_maxrss`` (KiB on Linux/BSD).
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _rss_child(argv: Sequence[str]) -> int:
    """Child of the RSS rows: parse one PDF, print ``{"maxrss_kib", "seconds"}`` (:func:`peak_rss_kib`)."""
    pdf, out, url, dpi, conc = argv
    t, _ = _run_pipeline(_parse_options(Path(pdf), Path(out), [url], int(conc), int(dpi)))
    print(json.dumps({"maxrss_kib": peak_rss_kib(), "seconds": t}))
    return 0


def _corpus_pdf() -> Path | None:
    """A born-digital corpus PDF for the embedded row, if the shared corpus is beside the checkout."""
    from ocrstack.core import paths

    root = Path(os.environ.get("OCRSTACK_CORPUS", "")) if os.environ.get("OCRSTACK_CORPUS") else None
    if root is None and paths.repo_root() is not None:
        root = paths.repo_root().parent / "shared" / "corpus"  # type: ignore[union-attr]
    candidate = root / "en_single_bzip2_manual.pdf" if root else None
    return candidate if candidate is not None and candidate.is_file() else None


def _embedded_rows(opts: BenchOptions, work: Path) -> list[Row]:
    from ocrstack.parsing.options import ParseOptions

    pdf = _corpus_pdf()
    source = "corpus en_single_bzip2_manual.pdf" if pdf else "generated text PDF"
    if pdf is None:
        pdf = make_pdf(work / f"doc-{opts.embedded_pages}.pdf", opts.embedded_pages)
    from ocrstack.parsing import documents

    n_pages = min(opts.embedded_pages, documents.count_pages(pdf))
    shutil.rmtree(work / "out-embedded", ignore_errors=True)
    options = ParseOptions(
        inputs=(pdf,),
        output=work / "out-embedded",
        force=True,
        dpi=opts.dpi,
        pages=f"1-{n_pages}",
    )
    try:
        t, summary = _run_pipeline(options)
    except (OcrstackError, ImportError) as exc:
        return [Row("embedded default pages/s", None, "pages/s", verdict="not-run", detail=str(exc)[:120])]
    pps = summary.documents[0].pages_per_second if summary is not None else n_pages / t
    return [
        Row(
            "embedded default pages/s",
            round(pps, 3),
            "pages/s",
            detail=f"rapid-layout + rapidocr, {n_pages} page(s) of {source}, "
            f"{os.cpu_count()} CPUs; {t:.1f} s with model load",
        )
    ]


def run(opts: BenchOptions) -> BenchResult:
    """Measure every row; a section whose dependency is missing becomes a ``not-run`` row with the reason."""
    result = BenchResult(options={k: v for k, v in asdict(opts).items() if k != "workdir"})
    with _workdir(opts.workdir) as work:
        sections = [
            ("client overhead", _overhead_rows),
            ("throughput", _scaling_rows),
            ("peak RSS", _rss_rows),
        ]
        if opts.embedded:
            sections.append(("embedded default pages/s", _embedded_rows))
        for name, fn in sections:
            try:
                result.rows.extend(fn(opts, work))
            except ImportError as exc:
                result.rows.append(Row(name, None, "", verdict="not-run", detail=f"missing module: {exc}"))
    return result


@contextmanager
def _workdir(path: Path | None) -> Iterator[Path]:
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path.absolute()
        return
    with tempfile.TemporaryDirectory(prefix="ocrstack-bench-") as tmp:
        yield Path(tmp)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--rss-child":
        sys.exit(_rss_child(sys.argv[2:]))
    print("usage: ocrstack bench [--quick] [--json]", file=sys.stderr)
    sys.exit(2)
