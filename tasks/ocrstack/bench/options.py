"""Options of ``ocrstack bench``, each declared once (:mod:`ocrstack.core.options`).

``ocrstack.commands.bench`` derives its flags from :class:`BenchOptions` and builds it with
:func:`from_values`; the bench rows and Python callers construct it directly
(:meth:`BenchOptions.quick` for the smoke run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError


def counts(flag: str, at_least: int = 1) -> Callable[[str], tuple[int, ...]]:
    """Converter for ``flag`` (``--endpoints``, ``--rss-pages``): comma-separated positive
    integers, at least ``at_least`` of them.

    Raises (from the converter):
        UsageError: not positive integers, or fewer than ``at_least``.
    """

    def convert(text: str) -> tuple[int, ...]:
        try:
            values = tuple(int(x) for x in text.split(",") if x.strip())
        except ValueError:
            values = ()
        if not values or min(values) < 1:
            raise UsageError(
                f"{flag}: expected comma-separated positive integers, got '{text}'", f"use e.g. {flag} 1,2,4"
            )
        if len(values) < at_least:
            raise UsageError(f"{flag} takes at least two numbers", f"use e.g. {flag} 10,300")
        return values

    return convert


def seconds(text: str) -> float:
    """Converter for ``--latency``: seconds > 0.

    Raises:
        UsageError: not a number, or zero or negative.
    """
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--latency: {text!r} is not a valid float", "use e.g. --latency 0.8") from None
    if value <= 0:
        raise UsageError(f"--latency must be > 0, got {value}", "use e.g. --latency 0.8")
    return value


#: Section names of ``ocrstack bench`` (``--only``), in the order they run.
SECTIONS = (
    "overhead", "throughput", "rss", "ray", "ray-cluster", "faults", "routing", "embedded", "accuracy",
    "peers",
)  # fmt: skip


def sections(text: str) -> tuple[str, ...]:
    """Converter for ``--only``: comma-separated names of :data:`SECTIONS`.

    Raises:
        UsageError: an unknown or no name.
    """
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [n for n in names if n not in SECTIONS]
    if bad or not names:
        raise UsageError(
            f"--only: unknown section {', '.join(bad) or repr(text)}", f"use names of: {', '.join(SECTIONS)}"
        )
    return names


def absolute(text: str) -> Path:
    """Converter for ``--workdir``: the path made absolute against the current directory."""
    return Path(text).absolute()


@dataclass(frozen=True)
class BenchOptions:
    """Benchmark settings; :meth:`quick` gives the smoke-run values.

    Attributes beyond the flags' help: ``latency`` is the simulated server seconds per page
    request (issue 3: 0.8); ``overhead_pages`` the pages of the client-overhead rows;
    ``endpoints`` the endpoint counts of the scaling rows, with ``pages_per_endpoint`` pages per
    endpoint; ``rss_pages`` the page counts of the peak-RSS rows: base, [middle...,] compared
    (last); ``embedded_pages`` the pages parsed by the embedded default (rapidocr; its row needs
    rapidocr + rapid-layout); ``concurrency`` the ``--concurrency`` of the pipelined runs
    (ParseOptions default); ``dpi`` the render resolution; ``workdir`` None is a temporary
    directory; ``only`` the sections to run (empty: all).
    """

    quick_mode: bool = opt.option(
        False, flags=("--quick",), help="smoke run: short latency, few pages, 1-2 endpoints"
    )
    latency: float = opt.option(
        0.8,
        flags=("--latency",),
        convert=seconds,
        example="0.8",
        help="simulated server seconds per page (default 0.8)",
    )
    overhead_pages: int = 20
    endpoints: tuple[int, ...] = opt.option(
        (1, 2, 4, 8),
        flags=("--endpoints",),
        convert=counts("--endpoints"),
        help="endpoint counts, e.g. 1,2,4,8",
    )
    pages_per_endpoint: int = 12
    rss_pages: tuple[int, ...] = opt.option(
        (10, 100, 300),
        flags=("--rss-pages",),
        convert=counts("--rss-pages", at_least=2),
        help="page counts, base first (default 10,100,300)",
    )
    embedded_pages: int = 3
    concurrency: int = 4
    dpi: int = 200
    embedded: bool = opt.option(True, flags=("--no-embedded",), help="skip the embedded rapidocr row")
    workdir: Path | None = opt.option(
        None, flags=("--workdir",), convert=absolute, help="keep PDFs, logs and outputs here"
    )
    only: tuple[str, ...] = opt.option(
        (),
        flags=("--only",),
        convert=sections,
        example="peers",
        help=f"run only these sections, comma-separated: {', '.join(SECTIONS)}",
    )

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


def from_values(values: Mapping[str, Any]) -> BenchOptions:
    """:class:`BenchOptions` from option values by field name (strings converted, checked):
    with ``quick_mode`` the smoke-run values, the other given values replacing them.

    Raises:
        UsageError: a value that does not convert or is out of range (flag and fix named).
    """
    opts = opt.build(BenchOptions, values)
    if not opts.quick_mode:
        return opts
    return BenchOptions.quick(**{name: getattr(opts, name) for name in values if name != "quick_mode"})
