"""``ocrstack fetch models|layout|check``: download models and the layout model, verify them (guide 3.4)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ocrstack.commands import add_json
from ocrstack.core.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``fetch`` verb with ``models``, ``layout`` and ``check``."""
    p = sub.add_parser("fetch", help="download models / the layout model and verify them (guide 3.4)")
    fsub = p.add_subparsers(dest="fetch_command", metavar="WHAT", required=True)

    m = fsub.add_parser(
        "models", help="main model + DSpark draft into ./models/NAME, then the guide 3.4 checks"
    )
    m.add_argument(
        "--name", action="append", default=[], help="catalog name (repeatable; default: main + draft)"
    )
    m.add_argument("--dest", type=Path, default=Path("models"), help="parent directory (default: ./models)")
    m.add_argument("--source", choices=["hf", "modelscope"], default="hf")
    m.add_argument("--endpoint", default=None, help="hub endpoint/mirror (default: $HF_ENDPOINT)")
    m.add_argument("--revision", default=None, help="branch, tag or commit (default: main)")
    m.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="NAME=REPO",
        help="repo id override, e.g. a ModelScope id (repeatable)",
    )
    add_json(m)
    m.set_defaults(handler=_models)

    c = fsub.add_parser("check", help="run the guide 3.4 checks on models already in --dest (no download)")
    c.add_argument(
        "--name", action="append", default=[], help="catalog name (repeatable; default: main + draft)"
    )
    c.add_argument("--dest", type=Path, default=Path("models"))
    c.add_argument("--layout-dir", type=Path, default=None, help="also check this OCR_LAYOUT_MODEL_DIR")
    add_json(c)
    c.set_defaults(handler=_check)

    lay = fsub.add_parser("layout", help="PP-DocLayoutV3 Paddle inference tarball -> ./PP-DocLayoutV3_infer")
    lay.add_argument("--dest", type=Path, default=Path("."), help="parent directory (default: current dir)")
    lay.add_argument("--url", default=None, help="tarball URL override (mirror)")
    lay.add_argument("--keep-tar", action="store_true", help="keep the tarball after extraction")
    lay.add_argument(
        "--retries", type=int, default=5, help="retries for transient failures (4xx never retried)"
    )
    lay.set_defaults(handler=_layout)


def _pairs(items: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k or not v:
            raise UsageError(
                f"--repo {item!r}: expected NAME=REPO", "e.g. --repo MiniCPM-OCR-1.0=OpenBMB/MiniCPM-OCR-1.0"
            )
        out.append((k, v))
    return tuple(out)


def _finish(report, as_json: bool) -> int:
    print(report.to_json() if as_json else report.to_text())
    report.raise_if_failed("fetch checks")
    return 0


def _models(args: argparse.Namespace) -> int:
    from ocrstack.fetch.models import ModelFetchOptions, fetch_models

    defaults = ModelFetchOptions()
    opts = ModelFetchOptions(
        names=tuple(args.name) or defaults.names,
        dest=args.dest,
        source=args.source,
        endpoint=args.endpoint,
        revision=args.revision,
        repo_overrides=_pairs(args.repo),
    )
    return _finish(fetch_models(opts), args.json)


def _check(args: argparse.Namespace) -> int:
    from ocrstack.fetch.models import ModelFetchOptions, fetch_models
    from ocrstack.fetch.verify import check_layout_dir

    defaults = ModelFetchOptions()
    report = fetch_models(
        ModelFetchOptions(names=tuple(args.name) or defaults.names, dest=args.dest, check_only=True)
    )
    if args.layout_dir is not None:
        report.add(check_layout_dir(args.layout_dir))
    return _finish(report, args.json)


def _layout(args: argparse.Namespace) -> int:
    from ocrstack.fetch.layout import LayoutFetchOptions, export_line, fetch_layout

    target, report = fetch_layout(
        LayoutFetchOptions(dest=args.dest, url=args.url, keep_tar=args.keep_tar, retries=args.retries)
    )
    print(report.to_text())
    report.raise_if_failed(f"{target}: layout model check")
    print(export_line(target))
    return 0
