"""``ocrstack api serve|load``: parse as an HTTP service (issue 12); argument parsing only."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

#: Environment variable read when ``--api-key`` is absent (keeps the key out of ``ps`` output).
API_KEY_ENV = "OCRSTACK_API_KEY"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``api`` verb with ``serve`` and ``load``."""
    from ocrstack.api.app import ServiceConfig
    from ocrstack.scaleout import options as ray_options

    d = ServiceConfig()
    p = sub.add_parser("api", help="parse as an HTTP service: jobs, metrics, web page (issue 12)")
    verbs = p.add_subparsers(dest="api_command", metavar="SUBCOMMAND", required=True)
    s = verbs.add_parser(
        "serve",
        help="start the service (FastAPI + uvicorn) on 127.0.0.1",
        description="Durable jobs in --data-dir (SQLite + files); a restart finishes every accepted job. "
        "Web page at /, OpenAPI at /docs, Prometheus at /metrics.",
    )
    s.add_argument("--host", default=d.host, help=f"bind address (default: {d.host}; others need --api-key)")
    s.add_argument("--port", type=int, default=d.port, help=f"port, 0 = any free one (default: {d.port})")
    s.add_argument(
        "--data-dir", type=Path, default=d.data_dir, help=f"jobs database and files ({d.data_dir})"
    )
    s.add_argument(
        "--api-key", default=None, help=f"require this key (default: ${API_KEY_ENV}; never logged)"
    )
    s.add_argument("--workers", type=int, default=d.workers, help=f"jobs parsed at once ({d.workers})")
    s.add_argument(
        "--max-queue", type=int, default=d.max_queue, help=f"queued+running jobs; more -> 429 ({d.max_queue})"
    )
    s.add_argument(
        "--max-upload-mb",
        type=float,
        default=d.max_upload_mb,
        help=f"upload limit -> 413 ({d.max_upload_mb:g})",
    )
    s.add_argument("--max-pages", type=int, default=d.max_pages, help=f"pages per job ({d.max_pages})")
    s.add_argument(
        "--sync-max-pages",
        type=int,
        default=d.sync_max_pages,
        help=f"pages for POST /v1/parse ({d.sync_max_pages})",
    )
    s.add_argument(
        "--sync-timeout",
        type=float,
        default=d.sync_timeout,
        help=f"seconds POST /v1/parse waits ({d.sync_timeout:g})",
    )
    s.add_argument(
        "--ttl-hours", type=float, default=d.ttl_hours, help=f"keep finished jobs this long ({d.ttl_hours:g})"
    )
    s.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow this origin (CORS off by default)",
    )
    b = d.base
    s.add_argument("--layout", default=b.layout, help=f"default layout provider ({b.layout})")
    s.add_argument(
        "--layout-model",
        type=Path,
        default=None,
        help="layout checkpoint dir (default: $OCR_LAYOUT_MODEL_DIR)",
    )
    s.add_argument("--recognizer", default=b.recognizer, help=f"default recognizer ({b.recognizer})")
    s.add_argument(
        "--server-url",
        action="append",
        dest="server_urls",
        metavar="URL",
        help="recognizer server; repeat; requests may only pick among these (default: the serve URL)",
    )
    s.add_argument("--model", default=b.model, help=f"served model name ({b.model})")
    s.add_argument("--prompts", default=b.prompts, help=f"default prompt set ({b.prompts})")
    s.add_argument("--dpi", type=int, default=b.dpi, help=f"default PDF render DPI ({b.dpi})")
    s.add_argument(
        "--concurrency", type=int, default=b.concurrency, help=f"requests per server ({b.concurrency})"
    )
    ray_options.add_arguments(s)  # --ray [ADDRESS]: every job's pages run on Ray
    s.set_defaults(handler=_serve)

    ld = verbs.add_parser(
        "load",
        help="bounded load/fault run against a local service (loopback only; prints a table)",
        description="50 concurrent jobs, status latency while parsing, SIGKILL + restart, "
        "RSS after 20 vs 200 jobs.",
    )
    ld.add_argument("--jobs", type=int, default=50, help="concurrent submissions (default: 50)")
    ld.add_argument("--rss-jobs", default="20,200", help="job counts for the RSS ratio (default: 20,200)")
    ld.add_argument("--workdir", type=Path, default=None, help="keep data, logs and inputs here")
    ld.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ld.set_defaults(handler=_load)


def _serve(args: argparse.Namespace) -> int:
    from ocrstack.api.app import ServiceConfig
    from ocrstack.api.options import validate
    from ocrstack.api.server import serve
    from ocrstack.core.errors import UsageError
    from ocrstack.scaleout import options as ray_options

    d = ServiceConfig()
    layout_model = args.layout_model or (
        Path(os.environ["OCR_LAYOUT_MODEL_DIR"]) if os.environ.get("OCR_LAYOUT_MODEL_DIR") else None
    )
    base = dataclasses.replace(
        d.base,
        layout=args.layout,
        layout_model=layout_model.absolute() if layout_model else None,
        recognizer=args.recognizer,
        model=args.model,
        prompts=args.prompts,
        dpi=args.dpi,
        concurrency=args.concurrency,
        api_key=os.environ.get("OPENAI_API_KEY") or None,
        **({"server_urls": tuple(u.rstrip("/") for u in args.server_urls)} if args.server_urls else {}),
    )
    validate(base)
    for name in ("workers", "max_queue", "max_pages", "sync_max_pages"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1", "use a positive number")
    config = ServiceConfig(
        data_dir=args.data_dir.absolute(),
        host=args.host,
        port=args.port,
        api_key=args.api_key or os.environ.get(API_KEY_ENV) or None,
        workers=args.workers,
        max_queue=args.max_queue,
        max_upload_mb=args.max_upload_mb,
        max_pages=args.max_pages,
        sync_max_pages=args.sync_max_pages,
        sync_timeout=args.sync_timeout,
        ttl_hours=args.ttl_hours,
        cors_origins=tuple(args.cors_origin),
        base=base,
        ray=ray_options.from_args(args).ray,
    )
    serve(config)
    return 0


def _load(args: argparse.Namespace) -> int:
    from ocrstack.api import loadtest
    from ocrstack.core.errors import UsageError

    try:
        small, big = (int(x) for x in args.rss_jobs.split(","))
    except ValueError:
        raise UsageError(
            f"--rss-jobs {args.rss_jobs!r}: expected two numbers", "use e.g. --rss-jobs 20,200"
        ) from None
    result = loadtest.run(
        loadtest.LoadOptions(jobs=args.jobs, rss_small=small, rss_big=big, workdir=args.workdir)
    )
    print(result.to_json() if args.json else result.table())
    return 0 if result.ok else 1
