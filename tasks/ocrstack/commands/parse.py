"""``ocrstack parse INPUT... [-o OUT] ...``: PDFs and images to Markdown (issue 3).

Only argument parsing here: every option flag is derived from its one declaration in
:mod:`ocrstack.parsing.options` (defaults, help, ranges), which also converts and validates the
values; :func:`ocrstack.parsing.run.pipeline.run` does the work and returns its outcome, which this
verb prints (stderr) and maps to the exit code (:meth:`ocrstack.parsing.run.outcomes.RunSummary.error`:
0 all ok, 7 failed pages or documents, 1 failed validation). Relative paths are resolved against
the current directory, once (the guide's ``--set`` relative-path pitfall cannot happen).
``OCR_LAYOUT_MODEL_DIR`` is read when ``--layout-model`` is absent. ``--ray`` / ``--ray-address
ADDRESS`` (:mod:`ocrstack.scaleout.options`) hand the pages to :class:`ocrstack.scaleout.RayExecutor`;
``--api URL`` sends the inputs to a running ``ocrstack api`` (:mod:`ocrstack.api.client`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from ocrstack.core import options as opt
from ocrstack.core.options import path
from ocrstack.parsing import options as parse_options
from ocrstack.parsing.options import LAYOUT_MODEL_ENV, ParseOptions
from ocrstack.scaleout import options as ray_options

__all__ = ["LAYOUT_MODEL_ENV", "options_from_args", "register"]


@dataclass(frozen=True)
class Run:
    """How this command line runs the parse (command line only: not parse options, no cache key)."""

    api: str | None = opt.option(
        None,
        flags=("--api",),
        metavar="URL",
        help="submit to a running `ocrstack api` service instead of parsing here; writes the same "
        "outputs (service key: $OCRSTACK_API_KEY)",
    )
    no_progress: bool = opt.option(False, flags=("--no-progress",), help="no progress bar")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``parse`` verb."""
    p = sub.add_parser(
        "parse",
        help="parse PDFs/images into Markdown (embedded CPU default, or any OpenAI-compatible OCR server)",
        description="Layout detection, recognition and Markdown assembly. Writes OUT/NAME.md and "
        "OUT/NAME.blocks.json per input; reruns resume from OUT/.ocrstack-cache.",
    )
    p.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="PDF/image files or directories")
    parse_options.add_arguments(p)
    ray_options.add_arguments(p)
    opt.add_arguments(p, Run)
    p.set_defaults(handler=_handle)


def options_from_args(args: argparse.Namespace) -> ParseOptions:
    """Build :class:`ParseOptions` from parsed arguments; relative paths made absolute against the cwd.

    Raises:
        UsageError: a value that does not convert or is out of range (flag and fix named).
    """
    return parse_options.from_args(args, inputs=tuple(path(p) for p in args.inputs))


def _handle(args: argparse.Namespace) -> int:
    options = options_from_args(args)  # a bad value is reported before the pipeline is imported
    run = opt.build(Run, opt.namespace_values(args, Run))
    ray = ray_options.from_args(args)
    ray_options.check_inputs(ray, args.inputs)  # the old `--ray ADDRESS IN`: the fix, not "no such file"
    address = ray.address
    if run.api:  # the service parses; the same option checks ran above (issue 12)
        from ocrstack.api.client import parse_via_api
        from ocrstack.core.errors import UsageError

        if address is not None:
            raise UsageError(
                "--api and --ray/--ray-address both given", "use one: the service decides where pages run"
            )
        parse_via_api(options, run.api)
        return 0
    executor = None
    if address is not None:  # --ray/--ray-address: pages computed on Ray (ray is imported only then)
        from ocrstack.scaleout import RayExecutor

        executor = RayExecutor(address, pool_ttl=ray.ray_pool_ttl)
    from ocrstack.parsing.run import pipeline

    try:
        summary = pipeline.run(options, progress=not run.no_progress, executor=executor)
    except KeyboardInterrupt:
        from ocrstack.parsing.run import interrupts

        # a page still in flight: end now with 130 instead of joining it (issue 10)
        interrupts.exit_interrupted("ocrstack: finished pages are kept; rerun the same command to resume")
        raise
    for line in summary.lines():
        print(line, file=sys.stderr)
    error = summary.error()
    if error is not None:
        raise error  # main() prints it and ends with its exit code
    return 0
