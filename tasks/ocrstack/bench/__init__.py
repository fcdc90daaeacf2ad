"""``ocrstack bench``: client overhead, multi-endpoint scaling, memory streaming and embedded speed (issue 3).

Every figure comes from running the real ``ocrstack parse`` pipeline
(:func:`ocrstack.parsing.run.pipeline.run`) on PDFs generated with pypdfium2 (US-letter pages,
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
* ``en|zh METHOD`` + target rows: the side-by-side table of issue 11 over the born-digital dev
  corpus (ocrstack auto / off / off before issue 11, rapidocr whole page, tesseract, text layer;
  recall, precision, order, s/page) and its targets (:mod:`~ocrstack.bench.accuracy_table`).
* ``born-digital TOOL cold|warm`` + ratio and memory rows: ocrstack beside pymupdf4llm (default
  and legacy mode) and markitdown over the born-digital dev corpus, cold (a process per file) and
  warm, peak RSS, fidelity scored as the issue 11 table; born-digital peak RSS and 300- vs
  10-page s/page (issue 21; :mod:`~ocrstack.bench.peers`).
* ``ray/local N servers``: ``--ray`` pages/s over the local dispatcher's for 1, 2, 4 servers, and
  Ray's own scaling (issue 13; :mod:`~ocrstack.bench.scaleout`; a not-run row without Ray).
* ``ray cold/warm/local``: ``--ray-address`` against a running ``ray start`` cluster, its first and
  second job, over the local pipeline (issue 23 item 3; target warm >= 0.95).
* fault rows ``scenario``: requests, retries, pages lost (target 0) and exit codes of scripted
  faults through the real CLI -- 5xx burst, poison block, server killed and restarted, Ctrl-C
  mid-page, SIGKILL mid-batch then rerun (issue 10; :mod:`~ocrstack.bench.faults`), and the
  routing split between an idle and a loaded server (issue 13).

Modules: :mod:`~ocrstack.bench.results` (options, rows, table), :mod:`~ocrstack.bench.harness`
(PDFs, fake-server fleet, quiet parse run), one module per benchmark (:mod:`~ocrstack.bench.overhead`,
:mod:`~ocrstack.bench.scaling`, :mod:`~ocrstack.bench.rss`, :mod:`~ocrstack.bench.embedded`);
``python -m ocrstack.bench --rss-child`` (:mod:`ocrstack.bench.__main__`) is the RSS child.

Run: ``ocrstack bench`` (a few minutes on 2 cores), ``ocrstack bench --quick``
(smoke run, seconds, smaller figures that are not comparable with the targets),
``--json`` for machine-readable output, ``--only peers`` (or other section names) for some sections.
"""

from __future__ import annotations

import importlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ocrstack.bench.options import BenchOptions
from ocrstack.bench.results import OVERHEAD_TARGET, RSS_TARGET, SCALING_TARGET, BenchResult, Row

#: Re-exported helpers -> their module, imported on first use (PEP 562): ``bench --help`` and the
#: options import no numpy or pypdfium2.
_HOME = {
    "Fleet": "ocrstack.bench.harness",
    "make_pdf": "ocrstack.bench.harness",
    "peak_rss_kib": "ocrstack.bench.rss",
}

__all__ = [
    "OVERHEAD_TARGET",
    "RSS_TARGET",
    "SCALING_TARGET",
    "BenchOptions",
    "BenchResult",
    "Fleet",
    "Row",
    "make_pdf",
    "peak_rss_kib",
    "run",
]


def run(opts: BenchOptions) -> BenchResult:
    """Measure every row; a section whose dependency is missing becomes a ``not-run`` row with the reason."""
    from ocrstack.bench.accuracy_table import accuracy_rows
    from ocrstack.bench.embedded import embedded_rows
    from ocrstack.bench.faults import fault_rows, routing_rows
    from ocrstack.bench.overhead import overhead_rows
    from ocrstack.bench.peers import peer_rows
    from ocrstack.bench.rss import rss_rows
    from ocrstack.bench.scaleout import scaleout_rows, warm_cluster_rows
    from ocrstack.bench.scaling import scaling_rows

    result = BenchResult(options={k: v for k, v in asdict(opts).items() if k != "workdir"})
    with _workdir(opts.workdir) as work:
        sections = [
            ("overhead", "client overhead", overhead_rows),
            ("throughput", "throughput", scaling_rows),
            ("rss", "peak RSS", rss_rows),
            ("ray", "ray vs local dispatcher", scaleout_rows),
            ("ray-cluster", "ray cluster warm vs local", warm_cluster_rows),
            ("faults", "faults", fault_rows),
            ("routing", "routing", routing_rows),
        ]
        if opts.embedded:
            sections.append(("embedded", "embedded default pages/s", embedded_rows))
            sections.append(("accuracy", "side-by-side OCR table", accuracy_rows))
            sections.append(("peers", "born-digital peers", peer_rows))
        for key, name, fn in sections:
            if opts.only and key not in opts.only:
                continue
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


def __getattr__(name: str) -> Any:
    """Import ``name``'s defining module on first access (:data:`_HOME`)."""
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
