"""``ocrstack serve``: start a recognition server from a profile; ``serve stop``; ``serve dspark-check``.

Examples::

    ocrstack serve --profile dspark --dry-run          # print the exact command and environment
    ocrstack serve --profile tf --venv /path/tf-ocr-env --model ./models/MiniCPM-OCR-1.0 --offline
    ocrstack serve stop --port 18499
    ocrstack serve dspark-check http://127.0.0.1:18499  # guide 6: counters exist and grow
    ocrstack serve --port 18604 dspark-check            # the same for the server on port 18604
"""

from __future__ import annotations

import argparse
from urllib.parse import urlparse

from ocrstack.commands import add_json
from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError
from ocrstack.serving.options import CheckOptions, ServeOptions, StopOptions
from ocrstack.versions import endpoints


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``serve`` verb with its ``stop`` and ``dspark-check`` actions."""
    p = sub.add_parser(
        "serve",
        help="start a recognition server from a profile (guide 4), stop it, or check DSpark (guide 6)",
        description="Start a server from a profile (serve_profiles.yaml); wait until it answers a request.",
    )
    opt.add_arguments(p, ServeOptions)
    p.set_defaults(handler=_serve)

    act = p.add_subparsers(dest="serve_action", metavar="ACTION")
    stop = act.add_parser("stop", help="stop the server started for a port, by its pid file")
    opt.add_arguments(stop, StopOptions, prefix="stop_")
    stop.set_defaults(handler=_stop)

    chk = act.add_parser("dspark-check", help="prove speculative decoding is active via /metrics (guide 6)")
    chk.add_argument(
        "url",
        nargs="?",
        default=None,
        help="server URL (default: http://127.0.0.1:PORT, PORT from --port, else versions.yaml serve.port)",
    )
    opt.add_arguments(chk, CheckOptions, prefix="check_")
    add_json(chk)
    chk.set_defaults(handler=_dspark_check)


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    """The :class:`~ocrstack.serving.options.ServeOptions` of the parsed ``serve`` flags (given
    before an action, too: ``serve --port 18604 dspark-check``).

    Raises:
        UsageError: a value that does not convert (``--port``, ``--timeout``, ``--set``).
    """
    return opt.build(ServeOptions, opt.namespace_values(args, ServeOptions))


def _serve(args: argparse.Namespace) -> int:
    opts = options_from_args(args)
    from ocrstack.serving import plan  # the back-ends and profiles: loaded by the action, not --help

    if opts.dry_run:
        lp = plan.plan(opts)
        # same profile/build refusal as a real run (an undetected build only shows as "unknown")
        plan.check_build(lp, allow_unknown=True)
        print(lp.render())
        return 0
    from ocrstack.client import metrics
    from ocrstack.serving import runner

    result = runner.serve(opts)
    runner.print_result(result)
    if result.plan.profile.speculative and opts.wait and opts.dspark_check:
        # guide 6: a server that answers is not proof that DSpark is active; check /metrics now.
        report = metrics.run_check(result.plan.url, result.plan.served_model)
        print(report.to_text())
        report.raise_if_failed("DSpark check")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from ocrstack.serving import process

    stop = opt.build(StopOptions, opt.namespace_values(args, StopOptions, prefix="stop_"))
    port = stop.port if stop.port is not None else endpoints.default_port()
    print(process.stop(stop.run_dir, port, grace=stop.grace))
    return 0


def _dspark_check(args: argparse.Namespace) -> int:
    from ocrstack.client import metrics
    from ocrstack.serving import process

    serve = options_from_args(args)
    check = opt.build(CheckOptions, opt.namespace_values(args, CheckOptions, prefix="check_"))
    if check.before or check.after:
        if not (check.before and check.after):
            raise UsageError("--before and --after go together", "pass both saved /metrics files")
        report = metrics.check(
            check.before.read_text(encoding="utf-8"), check.after.read_text(encoding="utf-8")
        )
    else:
        url, port = _check_target(args.url, serve.port, check.port)
        state: dict = {}
        if port is not None and urlparse(url).hostname in _LOCAL_HOSTS:
            state = process.read_state(serve.run_dir, port) or {}  # the server `serve` started there
        model = check.model or state.get("served_model") or endpoints.default_model()
        hint = (
            "start the server (`ocrstack serve`), or give the check its address: "
            "`ocrstack serve dspark-check http://HOST:PORT` or `ocrstack serve dspark-check --port PORT`"
        )
        report = metrics.run_check(url, model, check.requests, hint=hint)
    print(report.to_json() if args.json else report.to_text())
    report.raise_if_failed("DSpark check")
    return 0


_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _check_target(url: str | None, serve_port: int | None, check_port: int | None) -> tuple[str, int | None]:
    """``(url, port)`` for ``serve dspark-check``: the positional ``url``, else ``--port`` (given
    to ``serve``: ``serve_port``, or to ``dspark-check``: ``check_port``) on 127.0.0.1, else
    versions.yaml ``serve.port``.

    Raises:
        UsageError: two different ports were given (URL vs --port, or both --port options).
    """
    ports = {p for p in (serve_port, check_port) if p is not None}
    if len(ports) > 1:
        raise UsageError(
            f"two different ports given: serve --port {serve_port}, dspark-check --port {check_port}",
            "give the port once",
        )
    port = ports.pop() if ports else None
    if url:
        url_port = urlparse(url).port
        if port is not None and url_port != port:
            raise UsageError(
                f"server URL {url} and --port {port} name different ports",
                "give either the URL or --port",
            )
        return url, url_port
    if port is None:
        default = endpoints.default_server_url()
        return default, urlparse(default).port
    return f"http://127.0.0.1:{port}", port
