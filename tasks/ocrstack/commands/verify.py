"""``ocrstack verify``: output checks, DSpark activity and the two-backend verbatim check (guide 6, 7)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from ocrstack.commands import add_json
from ocrstack.core import options as opt
from ocrstack.verifying.options import VerifyOptions


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``verify`` verb."""
    p = sub.add_parser(
        "verify",
        help="check parse output, DSpark activity and two-backend agreement (guide 6, 7)",
        description="Every check is reported as pass, fail, warn or not-run with its reason; agreement "
        "between backends and DSpark activity are only stated when they were checked (guide 10). "
        "Pass at least one of --markdown, --dspark-url, --tiny, or --image with two backends "
        "(--tf-model / --server-url); with none of them there is nothing to check and verify exits 2.",
    )
    opt.add_arguments(p, VerifyOptions)
    add_json(p, what="the result")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from ocrstack.verifying import run

    opts = opt.build(VerifyOptions, opt.namespace_values(args, VerifyOptions))
    if opts.tiny:
        opts = dataclasses.replace(opts, tf_server=_tf_server)
    result = run(opts)
    print(result.to_json() if args.json else result.to_text())
    result.report.raise_if_failed("verify")
    return 0


def _tf_server(model_dir: Path, run_dir: Path, timeout: float):  # a context manager
    """``transformers serve`` of the tiny checkpoint for ``verify --tiny`` (log doctor included)."""
    from ocrstack.serving import ephemeral

    return ephemeral.transformers_server(model_dir, run_dir, timeout)
