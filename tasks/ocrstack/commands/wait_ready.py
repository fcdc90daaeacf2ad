"""``ocrstack wait-ready [URL]``: wait until a server answers one tiny real request (guide 4.4).

When the server was started by ``ocrstack serve`` (state file in ``--run-dir`` for the
URL's port), its log and pid are watched and its served model name is the default.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import urlparse

from ocrstack.backends import profiles
from ocrstack.client import readiness
from ocrstack.serving import process
from ocrstack.serving.options import DEFAULT_RUN_DIR
from ocrstack.versions import endpoints


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``wait-ready`` verb."""
    p = sub.add_parser(
        "wait-ready",
        help="wait until a server answers /health and one tiny real request (guide 4.4)",
        description="Ready = /health answers and a 1-token chat request with the expected model succeeds.",
    )
    p.add_argument("url", nargs="?", default=None, help="server URL (default: http://127.0.0.1:<serve.port>)")
    p.add_argument("--model", default=None, help="model name the server must accept (default: served name)")
    p.add_argument("--timeout", type=float, default=None, help="seconds (default: serve.first-start-seconds)")
    p.add_argument(
        "--log", type=Path, default=None, help="server log to watch (default: from the state file)"
    )
    p.add_argument("--pid", type=int, default=None, help="server pid to watch (default: from the state file)")
    p.add_argument("--run-dir", type=Path, default=DEFAULT_RUN_DIR, help="ocrstack serve state dir")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between probes")
    p.set_defaults(handler=_wait)


def _wait(args: argparse.Namespace) -> int:
    url = args.url or endpoints.default_server_url()
    port = urlparse(url).port
    state = process.read_state(args.run_dir, port) if port else None
    state = state or {}
    model = args.model or state.get("served_model") or endpoints.default_model()
    log = args.log or (Path(state["log"]) if state.get("log") else None)
    pid = args.pid or state.get("pid")
    out = readiness.wait_ready(
        url,
        model,
        timeout=args.timeout,
        log=log,
        pid=pid,
        interval=args.interval,
        pset=profiles.load(),
    )
    out.raise_for_failure()
    print(f"ready: {url} answered a real request for model '{model}' after {out.seconds:.1f} s")
    return 0
