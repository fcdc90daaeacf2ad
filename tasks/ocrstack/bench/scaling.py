"""Throughput rows: pages/s with 1, 2, 4, 8 endpoints against N x the single-endpoint figure."""

from __future__ import annotations

from pathlib import Path

from ocrstack.bench.harness import Fleet, make_pdf, parse_options, run_pipeline
from ocrstack.bench.options import BenchOptions
from ocrstack.bench.results import SCALING_TARGET, Row


def scaling_rows(opts: BenchOptions, work: Path) -> list[Row]:
    """Pages/s for each count in ``opts.endpoints``; the first count is the single-endpoint base.
    Target: >= :data:`SCALING_TARGET` x N x single (issue 3)."""
    rows = []
    single: float | None = None
    for n in opts.endpoints:
        pages = opts.pages_per_endpoint * n
        pdf = make_pdf(work / f"doc-{pages}.pdf", pages)
        with Fleet(n, opts.latency, work) as fleet:
            t, _ = run_pipeline(
                parse_options(pdf, work / f"out-scale-{n}", fleet.urls, opts.concurrency, opts.dpi)
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
