"""Benchmark settings, result rows and the table/JSON rendering (targets from issue 3)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

#: Targets from issue 3.
OVERHEAD_TARGET = 0.05
SCALING_TARGET = 0.9
RSS_TARGET = 1.2


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
