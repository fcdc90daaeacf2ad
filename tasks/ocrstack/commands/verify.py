"""``ocrstack verify``: output checks, DSpark activity and the two-backend verbatim check (guide 6, 7)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ocrstack.commands import add_json
from ocrstack.core.errors import UsageError


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
    g = p.add_argument_group("output checks (guide 6)")
    g.add_argument("--markdown", type=Path, help="Markdown written by the parser")
    g.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="KIND[@PAGES]",
        help="table, formula or text, optionally on pages, e.g. table@2,3 (repeatable); "
        "replaces that kind's pages read from the blocks file, other kinds add to them",
    )
    g.add_argument(
        "--blocks",
        type=Path,
        default=None,
        help="blocks file to read table/formula/text pages from "
        "(default: NAME.blocks.json beside the Markdown, when present)",
    )
    g.add_argument(
        "--no-blocks", action="store_true", help="ignore the blocks file; only --expect says what to check"
    )
    d = p.add_argument_group("DSpark (guide 6)")
    d.add_argument("--dspark-url", help="DSpark vLLM server, e.g. http://127.0.0.1:18499")
    d.add_argument("--dspark-model", default=None, help="served model name (default: versions.yaml)")
    d.add_argument(
        "--dspark-requests", type=int, default=3, help="requests sent between the two /metrics scrapes"
    )
    t = p.add_argument_group("two-backend verbatim check (guide 7)")
    t.add_argument(
        "--tiny",
        action="store_true",
        help="CI self-test on CPU: a tiny RANDOM checkpoint in-process vs a real `transformers serve` "
        "of it; shows the comparison works, does not check your model or server",
    )
    t.add_argument("--image", type=Path, help="image for both backends (guide 7: table.png)")
    t.add_argument("--prompt", default=None, help="prompt (default: the guide 7 OTSL table prompt)")
    t.add_argument(
        "--kind",
        choices=["table", "other"],
        default=None,
        help="table prompts must end with </otsl> (default: table when the prompt mentions OTSL)",
    )
    t.add_argument("--tf-model", type=Path, help="checkpoint for the in-process transformers side")
    t.add_argument(
        "--server-url",
        action="append",
        default=[],
        metavar="URL[=MODEL]",
        help="OpenAI-compatible server (repeatable); MODEL = served model name (default: versions.yaml)",
    )
    t.add_argument(
        "--reference",
        action="store_true",
        help="the image is the guide's 1080x1080 table image: also compare with guide 7's reference values",
    )
    t.add_argument(
        "--max-new-tokens", type=int, default=None, help="generation cap (default 512; 32 with --tiny)"
    )
    t.add_argument("--device", default="auto", help="in-process device: auto, cpu, cuda")
    t.add_argument(
        "--dtype", default="auto", help="in-process dtype (default: auto, like transformers serve)"
    )
    t.add_argument("--attn", default=None, help="in-process attention implementation (guide 7: sdpa)")
    t.add_argument(
        "--mm-processor-kwargs",
        default=None,
        metavar="JSON",
        help='image-processor settings for both sides, e.g. \'{"downsample_mode":"4x"}\' (guide 4.1)',
    )
    p.add_argument(
        "--work-dir", type=Path, default=Path(".ocrstack") / "verify", help="tiny checkpoint and logs"
    )
    p.add_argument("--report-dir", type=Path, default=None, help="write verify-report.json/.txt here")
    add_json(p, what="the result")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from ocrstack.verifying import VerifyOptions, run
    from ocrstack.versions.endpoints import default_model

    servers = []
    for item in args.server_url:
        url, sep, model = item.partition("=")
        if not url.startswith(("http://", "https://")):
            raise UsageError(
                f"--server-url {item!r}: expected http(s)://HOST:PORT[=MODEL]",
                "e.g. --server-url http://127.0.0.1:18499=minicpm-ocr",
            )
        servers.append((url, model if sep and model else default_model()))
    mm: tuple = ()
    if args.mm_processor_kwargs:
        example = 'e.g. \'{"downsample_mode":"4x"}\''
        try:
            parsed = json.loads(args.mm_processor_kwargs)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--mm-processor-kwargs: not JSON ({exc})", example) from exc
        if not isinstance(parsed, dict):
            raise UsageError("--mm-processor-kwargs must be a JSON object", example)
        mm = tuple(sorted(parsed.items()))
    opts = VerifyOptions(
        markdown=args.markdown,
        expect=tuple(args.expect),
        blocks=args.blocks,
        use_blocks=not args.no_blocks,
        dspark_url=args.dspark_url,
        dspark_model=args.dspark_model or default_model(),
        dspark_requests=args.dspark_requests,
        image=args.image,
        prompt=args.prompt,
        table=None if args.kind is None else args.kind == "table",
        tf_model=args.tf_model,
        servers=tuple(servers),
        tiny=args.tiny,
        reference=args.reference,
        max_new_tokens=args.max_new_tokens,
        device=args.device,
        dtype=args.dtype,
        attn=args.attn,
        mm_kwargs=mm,
        work_dir=args.work_dir,
        report_dir=args.report_dir,
        tf_server=_tf_server if args.tiny else None,
    )
    result = run(opts)
    print(result.to_json() if args.json else result.to_text())
    result.report.raise_if_failed("verify")
    return 0


def _tf_server(model_dir: Path, run_dir: Path, timeout: float):  # noqa: ANN202 - a context manager
    """``transformers serve`` of the tiny checkpoint for ``verify --tiny`` (log doctor included)."""
    from ocrstack.serving import ephemeral

    return ephemeral.transformers_server(model_dir, run_dir, timeout)
