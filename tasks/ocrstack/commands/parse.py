"""``ocrstack parse INPUT... [-o OUT] ...``: PDFs and images to Markdown (issue 3).

Only argument parsing here: the flags become :class:`ocrstack.parsing.options.ParseOptions` (all
defaults live there) and :func:`ocrstack.parsing.pipeline.run` does the work. Relative paths are
resolved against the current directory here, once (the guide's ``--set`` relative-path
pitfall cannot happen). ``OCR_LAYOUT_MODEL_DIR`` is read when ``--layout-model`` is absent.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

from ocrstack.parsing.layout import LAYOUTS
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.recognition import RECOGNIZERS

#: Environment variable naming the layout checkpoint / inference directory (issue 3).
LAYOUT_MODEL_ENV = "OCR_LAYOUT_MODEL_DIR"


def _defaults() -> ParseOptions:
    return ParseOptions(inputs=())


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``parse`` verb."""
    d = _defaults()
    p = sub.add_parser(
        "parse",
        help="parse PDFs/images into Markdown (embedded CPU default, or any OpenAI-compatible OCR server)",
        description="Layout detection, recognition and Markdown assembly. Writes OUT/NAME.md and "
        "OUT/NAME.blocks.json per input; reruns resume from OUT/.ocrstack-cache.",
    )
    p.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="PDF/image files or directories")
    p.add_argument(
        "-o", "--output", type=Path, default=d.output, help=f"output directory (default: {d.output})"
    )
    p.add_argument("--pages", default=d.pages, help="1-based page selection, e.g. 1-3,7 (default: all)")
    p.add_argument("--dpi", type=int, default=d.dpi, help=f"PDF render resolution (default: {d.dpi})")
    p.add_argument(
        "--layout",
        default=d.layout,
        metavar="KIND",
        help=f"layout provider: {', '.join(LAYOUTS)} (default: {d.layout})",
    )
    p.add_argument(
        "--layout-model",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"checkpoint/inference dir for pp-doclayout-v3 or paddlex (default: ${LAYOUT_MODEL_ENV})",
    )
    p.add_argument(
        "--recognizer",
        default=d.recognizer,
        metavar="KIND",
        help=f"recognizer: {', '.join(RECOGNIZERS)} (default: {d.recognizer})",
    )
    p.add_argument(
        "--server-url",
        action="append",
        dest="server_urls",
        metavar="URL",
        help=f"OpenAI-compatible endpoint; repeat for several (default: {d.server_urls[0]})",
    )
    p.add_argument("--model", default=d.model, help=f"served model name (default: {d.model})")
    p.add_argument(
        "--prompts",
        default=d.prompts,
        metavar="NAME|FILE",
        help=f"prompt set name or YAML file (default: {d.prompts})",
    )
    p.add_argument(
        "--api-key",
        default=None,
        help="bearer token for --recognizer openai (default: $OPENAI_API_KEY; never logged)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=d.max_tokens,
        help=f"generation cap per block (default: {d.max_tokens})",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=d.request_timeout,
        help=f"seconds per request (default: {d.request_timeout:g})",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=d.retries,
        help=f"retries after connection errors/timeouts/5xx, never after a 4xx (default: {d.retries})",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=d.concurrency,
        help=f"in-flight requests per server (default: {d.concurrency})",
    )
    p.add_argument("--limit", type=int, default=d.limit, help="parse at most N pages per input")
    p.add_argument(
        "--max-pixels",
        type=int,
        default=d.max_pixels,
        help=f"pixel budget per rendered page; larger pages are scaled down (default: {d.max_pixels})",
    )
    p.add_argument("--password", default=d.password, help="PDF user password")
    p.add_argument("--force", action="store_true", help="overwrite existing finished outputs")
    p.add_argument("--keep-paratext", action="store_true", help="keep headers, footers and page numbers")
    p.add_argument("--save-layout-images", action="store_true", help="write per-page layout overlay PNGs")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_handle)


def _abs(path: Path | None) -> Path | None:
    return None if path is None else Path(os.path.abspath(os.path.expanduser(path)))


def options_from_args(args: argparse.Namespace) -> ParseOptions:
    """Build :class:`ParseOptions` from parsed arguments; relative paths made absolute against the cwd."""
    layout_model = args.layout_model
    if layout_model is None and os.environ.get(LAYOUT_MODEL_ENV):
        layout_model = Path(os.environ[LAYOUT_MODEL_ENV])
    prompts = args.prompts
    if Path(prompts).suffix in (".yaml", ".yml") or os.sep in prompts:
        prompts = str(_abs(Path(prompts)))
    values = {
        "inputs": tuple(_abs(p) for p in args.inputs),
        "output": _abs(args.output),
        "pages": args.pages,
        "dpi": args.dpi,
        "layout": args.layout,
        "layout_model": _abs(layout_model),
        "recognizer": args.recognizer,
        "model": args.model,
        "prompts": prompts,
        "concurrency": args.concurrency,
        "limit": args.limit,
        "max_pixels": args.max_pixels,
        "password": args.password,
        "force": args.force,
        "keep_paratext": args.keep_paratext,
        "save_layout_images": args.save_layout_images,
        "api_key": args.api_key,
        "max_tokens": args.max_tokens,
        "request_timeout": args.timeout,
        "retries": args.retries,
    }
    if args.server_urls:
        values["server_urls"] = tuple(args.server_urls)
    return dataclasses.replace(_defaults(), **values)


def _handle(args: argparse.Namespace) -> int:
    from ocrstack.core.errors import UsageError
    from ocrstack.parsing import pipeline

    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be >= 1, got {args.concurrency}", "use e.g. --concurrency 4")
    if args.max_pixels < 1:
        raise UsageError(
            f"--max-pixels must be >= 1, got {args.max_pixels}", "use e.g. --max-pixels 40000000"
        )
    if args.max_tokens < 1 or args.timeout <= 0 or args.retries < 0:
        raise UsageError(
            f"--max-tokens {args.max_tokens}, --timeout {args.timeout:g}, --retries {args.retries}: "
            "out of range",
            "use --max-tokens >= 1, --timeout > 0 and --retries >= 0",
        )
    pipeline.run(options_from_args(args), progress=not args.no_progress)
    return 0
