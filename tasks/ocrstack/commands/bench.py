"""``ocrstack bench [--quick] [--json]``: client overhead, endpoint scaling, peak RSS, embedded speed."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from ocrstack.commands import add_json
from ocrstack.core.errors import UsageError


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got '{text}'")
    return values


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``bench`` verb."""
    p = sub.add_parser(
        "bench",
        help="benchmark the parse client against local fake OpenAI endpoints (not a test)",
        description="Measure client overhead, scaling over endpoints, peak RSS and embedded pages/s; "
        "print one table.",
    )
    p.add_argument("--quick", action="store_true", help="smoke run: short latency, few pages, 1-2 endpoints")
    add_json(p, what="the result")
    p.add_argument(
        "--latency", type=float, default=None, help="simulated server seconds per page (default 0.8)"
    )
    p.add_argument("--endpoints", type=_ints, default=None, help="endpoint counts, e.g. 1,2,4,8")
    p.add_argument(
        "--rss-pages", type=_ints, default=None, help="page counts, base first (default 10,100,300)"
    )
    p.add_argument("--no-embedded", action="store_true", help="skip the embedded rapidocr row")
    p.add_argument("--workdir", type=Path, default=None, help="keep PDFs, logs and outputs here")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from ocrstack import bench

    opts = bench.BenchOptions.quick() if args.quick else bench.BenchOptions()
    changes: dict[str, object] = {"embedded": not args.no_embedded}
    if args.latency is not None:
        if args.latency <= 0:
            raise UsageError(f"--latency must be > 0, got {args.latency}", "use e.g. --latency 0.8")
        changes["latency"] = args.latency
    if args.endpoints is not None:
        changes["endpoints"] = args.endpoints
    if args.rss_pages is not None:
        if len(args.rss_pages) < 2:
            raise UsageError("--rss-pages takes at least two numbers", "use e.g. --rss-pages 10,300")
        changes["rss_pages"] = args.rss_pages
    if args.workdir is not None:
        changes["workdir"] = args.workdir.absolute()
    result = bench.run(replace(opts, **changes))  # type: ignore[arg-type]
    print(result.to_json() if args.json else result.to_text())
    return 0
