"""Benchmark settings, result rows and the table/JSON rendering (targets from issue 3)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

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
