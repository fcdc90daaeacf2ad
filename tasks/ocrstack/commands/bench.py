"""``ocrstack bench [--quick] [--json]``: client overhead, endpoint scaling, peak RSS, embedded speed."""

from __future__ import annotations

import argparse

from ocrstack.bench.options import BenchOptions, from_values
from ocrstack.commands import add_json
from ocrstack.core import options as opt


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``bench`` verb; its flags come from :class:`~ocrstack.bench.options.BenchOptions`."""
    p = sub.add_parser(
        "bench",
        help="benchmark the parse client against local fake OpenAI endpoints (not a test)",
        description="Measure client overhead, scaling over endpoints, peak RSS and embedded pages/s; "
        "print one table.",
    )
    opt.add_arguments(p, BenchOptions)
    add_json(p, what="the result")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from ocrstack import bench

    result = bench.run(from_values(opt.namespace_values(args, BenchOptions)))
    print(result.to_json() if args.json else result.to_text())
    return 0
