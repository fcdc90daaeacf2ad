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
from pathlib import Path
from urllib.parse import urlparse

from ocrstack.client import metrics
from ocrstack.commands import add_json
from ocrstack.core.errors import UsageError
from ocrstack.serving import plan, process, runner
from ocrstack.versions import endpoints

_SHORTCUTS = ("model", "draft_model", "port", "host", "served_model_name", "gguf", "mmproj")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``serve`` verb with its ``stop`` and ``dspark-check`` actions."""
    p = sub.add_parser(
        "serve",
        help="start a recognition server from a profile (guide 4), stop it, or check DSpark (guide 6)",
        description="Start a server from a profile (serve_profiles.yaml); wait until it answers a request.",
    )
    p.add_argument(
        "--profile",
        default="dspark",
        help="dspark (default, guide 4.1), standard, tf, llamacpp; "
        "dspark-upstream, standard-upstream for upstream vLLM from PyPI",
    )
    p.add_argument("--profiles", type=Path, default=None, help="profiles YAML (default: the packaged one)")
    p.add_argument("--model", help="main model directory (default ./models/MiniCPM-OCR-1.0, guide 3.4)")
    p.add_argument("--draft-model", help="DSpark draft model directory (dspark profile)")
    p.add_argument("--port", type=int, help="port (default: versions.yaml serve.port)")
    p.add_argument("--host", help="listen address for profiles that take one (default 127.0.0.1)")
    p.add_argument(
        "--served-model-name", help="name clients send (default: versions.yaml serve.served-model-name)"
    )
    p.add_argument("--gguf", help="GGUF model file (llamacpp profile)")
    p.add_argument(
        "--mmproj", help="GGUF multimodal projector (llamacpp profile; without it images are ignored)"
    )
    p.add_argument("--set", action="append", default=[], metavar="VAR=VALUE", help="any profile placeholder")
    p.add_argument(
        "--venv",
        type=Path,
        help="server environment (default: ./vllm-ocr-env / ./tf-ocr-env, else $VIRTUAL_ENV)",
    )
    p.add_argument("--gpu", help="CUDA_VISIBLE_DEVICES value (default: the freest GPU via nvidia-smi)")
    p.add_argument(
        "--build", help="declare the server build instead of detecting it (feat-ocr, upstream, ...)"
    )
    p.add_argument("--run-dir", type=Path, default=plan.DEFAULT_RUN_DIR, help="log/pid/state directory")
    p.add_argument(
        "--offline", action="store_true", help="set HF_HUB_OFFLINE=1 and HF_HUB_DISABLE_UPDATE_CHECK=1"
    )
    p.add_argument("--timeout", type=float, help="readiness timeout, s (default: versions.yaml first-start)")
    p.add_argument("--no-wait", action="store_true", help="return right after launch")
    p.add_argument("--no-restart", action="store_true", help="do not apply the guide 4.4 restart policy")
    p.add_argument(
        "--extra", action="append", default=[], metavar="ARG", help="append ARG to the server argv"
    )
    p.add_argument(
        "--no-dspark-check",
        action="store_true",
        help="profiles with --speculative-config (dspark, dspark-upstream): skip the /metrics proof "
        "that speculative decoding is active (guide 6)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the exact command and environment, start nothing"
    )
    p.set_defaults(handler=_serve)

    act = p.add_subparsers(dest="serve_action", metavar="ACTION")
    stop = act.add_parser("stop", help="stop the server started for a port, by its pid file")
    stop.add_argument("--port", dest="stop_port", type=int, default=None, help="port (default: serve.port)")
    stop.add_argument("--run-dir", dest="stop_run_dir", type=Path, default=plan.DEFAULT_RUN_DIR)
    stop.add_argument("--grace", type=float, default=30.0, help="seconds between SIGTERM and SIGKILL")
    stop.set_defaults(handler=_stop)

    chk = act.add_parser("dspark-check", help="prove speculative decoding is active via /metrics (guide 6)")
    chk.add_argument(
        "url",
        nargs="?",
        default=None,
        help="server URL (default: http://127.0.0.1:PORT, PORT from --port, else versions.yaml serve.port)",
    )
    chk.add_argument(
        "--port",
        dest="check_port",
        type=int,
        default=None,
        help="server port on 127.0.0.1 (same as `ocrstack serve --port PORT dspark-check`)",
    )
    chk.add_argument("--model", dest="check_model", default=None, help="served model name (default: pin)")
    chk.add_argument("--requests", type=int, default=3, help="real requests sent between the two scrapes")
    chk.add_argument("--before", type=Path, help="evaluate saved /metrics text instead of a live server")
    chk.add_argument("--after", type=Path, help="saved /metrics text after the requests (with --before)")
    add_json(chk)
    chk.set_defaults(handler=_dspark_check)


def options_from_args(args: argparse.Namespace) -> plan.ServeOptions:
    """Build :class:`ocrstack.serving.plan.ServeOptions` from parsed arguments."""
    values: dict[str, object] = {k: getattr(args, k) for k in _SHORTCUTS}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(
                f"--set expects VAR=VALUE, got {item!r}", "e.g. --set draft_model=/models/dspark"
            )
        values[key.replace("-", "_")] = value
    return plan.ServeOptions(
        profile=args.profile,
        profiles_file=args.profiles,
        vars=values,
        venv=args.venv,
        gpu=args.gpu,
        build=args.build,
        run_dir=args.run_dir,
        offline=args.offline,
        extra_args=tuple(args.extra),
        timeout=args.timeout,
        wait=not args.no_wait,
        restart=not args.no_restart,
    )


def _serve(args: argparse.Namespace) -> int:
    opts = options_from_args(args)
    if args.dry_run:
        lp = plan.plan(opts)
        # same profile/build refusal as a real run (an undetected build only shows as "unknown")
        plan.check_build(lp, allow_unknown=True)
        print(lp.render())
        return 0
    result = runner.serve(opts)
    runner.print_result(result)
    if result.plan.profile.speculative and opts.wait and not args.no_dspark_check:
        # guide 6: a server that answers is not proof that DSpark is active; check /metrics now.
        report = metrics.run_check(result.plan.url, result.plan.served_model)
        print(report.to_text())
        report.raise_if_failed("DSpark check")
    return 0


def _stop(args: argparse.Namespace) -> int:
    port = args.stop_port
    if port is None:
        port = endpoints.default_port()
    print(process.stop(args.stop_run_dir, port, grace=args.grace))
    return 0


def _dspark_check(args: argparse.Namespace) -> int:
    if args.before or args.after:
        if not (args.before and args.after):
            raise UsageError("--before and --after go together", "pass both saved /metrics files")
        report = metrics.check(
            args.before.read_text(encoding="utf-8"), args.after.read_text(encoding="utf-8")
        )
    else:
        url, port = _check_target(args)
        state: dict = {}
        if port is not None and urlparse(url).hostname in _LOCAL_HOSTS:
            state = process.read_state(args.run_dir, port) or {}  # the server `serve` started there
        model = args.check_model or state.get("served_model") or endpoints.default_model()
        hint = (
            "start the server (`ocrstack serve`), or give the check its address: "
            "`ocrstack serve dspark-check http://HOST:PORT` or `ocrstack serve dspark-check --port PORT`"
        )
        report = metrics.run_check(url, model, args.requests, hint=hint)
    print(report.to_json() if args.json else report.to_text())
    report.raise_if_failed("DSpark check")
    return 0


_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _check_target(args: argparse.Namespace) -> tuple[str, int | None]:
    """``(url, port)`` for ``serve dspark-check``: the positional URL, else ``--port`` (given to
    ``serve`` or to ``dspark-check``) on 127.0.0.1, else versions.yaml ``serve.port``.

    Raises:
        UsageError: two different ports were given (URL vs --port, or both --port options).
    """
    ports = {p for p in (args.port, args.check_port) if p is not None}
    if len(ports) > 1:
        raise UsageError(
            f"two different ports given: serve --port {args.port}, dspark-check --port {args.check_port}",
            "give the port once",
        )
    port = ports.pop() if ports else None
    if args.url:
        url_port = urlparse(args.url).port
        if port is not None and url_port != port:
            raise UsageError(
                f"server URL {args.url} and --port {port} name different ports",
                "give either the URL or --port",
            )
        return args.url, url_port
    if port is None:
        url = endpoints.default_server_url()
        return url, urlparse(url).port
    return f"http://127.0.0.1:{port}", port
