"""``ocrstack fetch models|layout|check``: download models and the layout model, verify them (guide 3.4)."""

from __future__ import annotations

import argparse

from ocrstack.commands import add_json
from ocrstack.core import options as opt
from ocrstack.fetch.options import CheckOptions, LayoutFetchOptions, ModelFetchOptions


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``fetch`` verb with ``models``, ``layout`` and ``check``; each one's flags come from
    its options class (:mod:`ocrstack.fetch.options`)."""
    p = sub.add_parser("fetch", help="download models / the layout model and verify them (guide 3.4)")
    fsub = p.add_subparsers(dest="fetch_command", metavar="WHAT", required=True)

    m = fsub.add_parser(
        "models", help="main model + DSpark draft into ./models/NAME, then the guide 3.4 checks"
    )
    opt.add_arguments(m, ModelFetchOptions)
    add_json(m)
    m.set_defaults(handler=_models)

    c = fsub.add_parser("check", help="run the guide 3.4 checks on models already in --dest (no download)")
    opt.add_arguments(c, CheckOptions)
    add_json(c)
    c.set_defaults(handler=_check)

    lay = fsub.add_parser("layout", help="PP-DocLayoutV3 Paddle inference tarball -> ./PP-DocLayoutV3_infer")
    opt.add_arguments(lay, LayoutFetchOptions)
    lay.set_defaults(handler=_layout)


def _finish(report, as_json: bool) -> int:
    print(report.to_json() if as_json else report.to_text())
    report.raise_if_failed("fetch checks")
    return 0


def _models(args: argparse.Namespace) -> int:
    from ocrstack.fetch.models import fetch_models

    opts = opt.build(ModelFetchOptions, opt.namespace_values(args, ModelFetchOptions))
    return _finish(fetch_models(opts), args.json)


def _check(args: argparse.Namespace) -> int:
    from ocrstack.fetch.models import fetch_models
    from ocrstack.fetch.verify import check_layout_dir

    check = opt.build(CheckOptions, opt.namespace_values(args, CheckOptions))
    report = fetch_models(opt.project(check, ModelFetchOptions, check_only=True))
    if check.layout_dir is not None:
        report.add(check_layout_dir(check.layout_dir))
    return _finish(report, args.json)


def _layout(args: argparse.Namespace) -> int:
    from ocrstack.fetch.layout import export_line, fetch_layout

    target, report = fetch_layout(
        opt.build(LayoutFetchOptions, opt.namespace_values(args, LayoutFetchOptions))
    )
    print(report.to_text())
    report.raise_if_failed(f"{target}: layout model check")
    print(export_line(target))
    return 0
