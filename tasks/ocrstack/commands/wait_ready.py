"""``ocrstack wait-ready [URL]``: wait until a server answers one tiny real request (guide 4.4).

When the server was started by ``ocrstack serve`` (state file in ``--run-dir`` for the
URL's port), its log and pid are watched and its served model name is the default.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import urlparse

from ocrstack.core import options as opt
from ocrstack.serving.options import WaitOptions
from ocrstack.versions import endpoints


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``wait-ready`` verb; its flags come from
    :class:`~ocrstack.serving.options.WaitOptions` (the URL stays a positional argument)."""
    p = sub.add_parser(
        "wait-ready",
        help="wait until a server answers /health and one tiny real request (guide 4.4)",
        description="Ready = /health answers and a 1-token chat request with the expected model succeeds.",
    )
    p.add_argument("url", nargs="?", default=None, help="server URL (default: http://127.0.0.1:<serve.port>)")
    opt.add_arguments(p, WaitOptions)
    p.set_defaults(handler=_wait)


def _wait(args: argparse.Namespace) -> int:
    from ocrstack.backends import profiles  # the back-ends and the HTTP client: on use, not --help
    from ocrstack.client import readiness
    from ocrstack.serving import process

    opts = opt.build(WaitOptions, opt.namespace_values(args, WaitOptions), url=args.url)
    url = opts.url or endpoints.default_server_url()
    port = urlparse(url).port
    state = process.read_state(opts.run_dir, port) if port else None
    state = state or {}
    model = opts.model or state.get("served_model") or endpoints.default_model()
    log = opts.log or (Path(state["log"]) if state.get("log") else None)
    pid = opts.pid or state.get("pid")
    out = readiness.wait_ready(
        url,
        model,
        timeout=opts.timeout,
        log=log,
        pid=pid,
        interval=opts.interval,
        pset=profiles.load(),
    )
    out.raise_for_failure()
    print(f"ready: {url} answered a real request for model '{model}' after {out.seconds:.1f} s")
    return 0
