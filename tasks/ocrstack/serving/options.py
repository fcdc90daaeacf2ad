"""Options of ``ocrstack serve``, ``serve stop`` and ``serve dspark-check``, each declared once
(:mod:`ocrstack.core.options`).

``ocrstack.commands.serve`` derives its flags from :class:`ServeOptions`, :class:`StopOptions`
and :class:`CheckOptions` and builds them from the parsed flags; Python callers (the ephemeral
``transformers serve`` of ``verify --tiny``, tests) construct :class:`ServeOptions` directly with
the same defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError

DEFAULT_RUN_DIR = Path(".ocrstack") / "serve"
#: The placeholders that have their own flag (``--model`` ... ``--mmproj``), in flag order.
SHORTCUTS = ("model", "draft_model", "port", "host", "served_model_name", "gguf", "mmproj")


def placeholder(item: str) -> tuple[str, str]:
    """Converter for ``--set VAR=VALUE``: ``(var, value)``, ``-`` in the name read as ``_``.

    Raises:
        UsageError: no ``=`` or an empty name.
    """
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise UsageError(f"--set expects VAR=VALUE, got {item!r}", "e.g. --set draft_model=/models/dspark")
    return key.replace("-", "_"), value


@dataclass(frozen=True)
class ServeOptions:
    """Everything ``ocrstack serve`` needs (defaults here only; the CLI fills them).

    Attributes beyond the flags' help: ``model`` ... ``mmproj`` and ``sets`` (``--set``, in
    order) are profile placeholders, ``vars`` further ones from Python callers; all of them
    together are :meth:`placeholders` (None values are ignored). ``venv`` None is
    :func:`ocrstack.serving.environment.default_env`; ``gpu`` None the freest GPU (nvidia-smi);
    ``build`` None detects the server build; ``run_dir`` holds ``serve-<port>.{log,pid,json}``;
    ``extra_args`` are appended to the profile's arguments verbatim; ``timeout`` None is
    versions.yaml ``serve.first-start-seconds``. ``dspark_check`` and ``dry_run`` are read by the
    caller (:mod:`ocrstack.commands.serve`), not by the plan.
    """

    profile: str = opt.option(
        "dspark",
        flags=("--profile",),
        help="dspark (default, guide 4.1), standard, tf, llamacpp; "
        "dspark-upstream, standard-upstream for upstream vLLM from PyPI",
    )
    profiles_file: Path | None = opt.option(
        None, flags=("--profiles",), convert=Path, help="profiles YAML (default: the packaged one)"
    )
    model: str | None = opt.option(
        None, flags=("--model",), help="main model directory (default ./models/MiniCPM-OCR-1.0, guide 3.4)"
    )
    draft_model: str | None = opt.option(
        None, flags=("--draft-model",), help="DSpark draft model directory (dspark profile)"
    )
    port: int | None = opt.option(
        None, flags=("--port",), convert=int, example="18499", help="port (default: versions.yaml serve.port)"
    )
    host: str | None = opt.option(
        None, flags=("--host",), help="listen address for profiles that take one (default 127.0.0.1)"
    )
    served_model_name: str | None = opt.option(
        None,
        flags=("--served-model-name",),
        help="name clients send (default: versions.yaml serve.served-model-name)",
    )
    gguf: str | None = opt.option(None, flags=("--gguf",), help="GGUF model file (llamacpp profile)")
    mmproj: str | None = opt.option(
        None,
        flags=("--mmproj",),
        help="GGUF multimodal projector (llamacpp profile; without it images are ignored)",
    )
    sets: tuple[tuple[str, str], ...] = opt.option(
        (),
        flags=("--set",),
        many=True,
        convert=placeholder,
        metavar="VAR=VALUE",
        help="any profile placeholder",
    )
    venv: Path | None = opt.option(
        None,
        flags=("--venv",),
        convert=Path,
        help="server environment (default: ./vllm-ocr-env / ./tf-ocr-env, else $VIRTUAL_ENV)",
    )
    gpu: str | None = opt.option(
        None, flags=("--gpu",), help="CUDA_VISIBLE_DEVICES value (default: the freest GPU via nvidia-smi)"
    )
    build: str | None = opt.option(
        None,
        flags=("--build",),
        help="declare the server build instead of detecting it (feat-ocr, upstream, ...)",
    )
    run_dir: Path = opt.option(
        DEFAULT_RUN_DIR, flags=("--run-dir",), convert=Path, help="log/pid/state directory"
    )
    offline: bool = opt.option(
        False, flags=("--offline",), help="set HF_HUB_OFFLINE=1 and HF_HUB_DISABLE_UPDATE_CHECK=1"
    )
    timeout: float | None = opt.option(
        None,
        flags=("--timeout",),
        convert=float,
        example="600",
        help="readiness timeout, s (default: versions.yaml first-start)",
    )
    wait: bool = opt.option(True, flags=("--no-wait",), help="return right after launch")
    restart: bool = opt.option(
        True, flags=("--no-restart",), help="do not apply the guide 4.4 restart policy"
    )
    extra_args: tuple[str, ...] = opt.option(
        (), flags=("--extra",), many=True, metavar="ARG", help="append ARG to the server argv"
    )
    dspark_check: bool = opt.option(
        True,
        flags=("--no-dspark-check",),
        help="profiles with --speculative-config (dspark, dspark-upstream): skip the /metrics proof "
        "that speculative decoding is active (guide 6)",
    )
    dry_run: bool = opt.option(
        False, flags=("--dry-run",), help="print the exact command and environment, start nothing"
    )
    vars: Mapping[str, Any] = field(default_factory=dict)

    def placeholders(self) -> dict[str, Any]:
        """The profile placeholder overrides: the shortcut flags (None when not given), then
        ``vars``, then ``--set`` (a later one wins)."""
        return {**{k: getattr(self, k) for k in SHORTCUTS}, **self.vars, **dict(self.sets)}


@dataclass(frozen=True)
class StopOptions:
    """Options of ``ocrstack serve stop``: the server started for ``port`` (None: versions.yaml
    ``serve.port``) is found by its pid file in ``run_dir`` and gets ``grace`` seconds between
    SIGTERM and SIGKILL."""

    port: int | None = opt.option(
        None, flags=("--port",), convert=int, example="18499", help="port (default: serve.port)"
    )
    run_dir: Path = opt.option(DEFAULT_RUN_DIR, flags=("--run-dir",), convert=Path, help="")
    grace: float = opt.option(
        30.0, flags=("--grace",), convert=float, example="30", help="seconds between SIGTERM and SIGKILL"
    )


@dataclass(frozen=True)
class CheckOptions:
    """Options of ``ocrstack serve dspark-check`` (the server URL is its positional argument):
    ``port`` a server on 127.0.0.1, ``model`` the served model name (None: the state file of the
    server ``serve`` started there, else the pin), ``requests`` real requests sent between the two
    ``/metrics`` scrapes, ``before``/``after`` saved ``/metrics`` texts checked instead of a live
    server."""

    port: int | None = opt.option(
        None,
        flags=("--port",),
        convert=int,
        example="18499",
        help="server port on 127.0.0.1 (same as `ocrstack serve --port PORT dspark-check`)",
    )
    model: str | None = opt.option(None, flags=("--model",), help="served model name (default: pin)")
    requests: int = opt.option(
        3,
        flags=("--requests",),
        convert=int,
        example="3",
        help="real requests sent between the two scrapes",
    )
    before: Path | None = opt.option(
        None, flags=("--before",), convert=Path, help="evaluate saved /metrics text instead of a live server"
    )
    after: Path | None = opt.option(
        None, flags=("--after",), convert=Path, help="saved /metrics text after the requests (with --before)"
    )


@dataclass(frozen=True)
class WaitOptions:
    """Options of ``ocrstack wait-ready [URL]`` (guide 4.4).

    Attributes beyond the flags' help: ``url`` (the positional argument) None is
    ``http://127.0.0.1:<serve.port>``; ``model``, ``log`` and ``pid`` None are read from the state
    file ``ocrstack serve`` left in ``run_dir`` for the URL's port (the model then from the pin);
    ``timeout`` None is versions.yaml ``serve.first-start-seconds``.
    """

    url: str | None = None
    model: str | None = opt.option(
        None, flags=("--model",), help="model name the server must accept (default: served name)"
    )
    timeout: float | None = opt.option(
        None,
        flags=("--timeout",),
        convert=float,
        example="600",
        help="seconds (default: serve.first-start-seconds)",
    )
    log: Path | None = opt.option(
        None, flags=("--log",), convert=Path, help="server log to watch (default: from the state file)"
    )
    pid: int | None = opt.option(
        None, flags=("--pid",), convert=int, help="server pid to watch (default: from the state file)"
    )
    run_dir: Path = opt.option(
        DEFAULT_RUN_DIR, flags=("--run-dir",), convert=Path, help="ocrstack serve state dir"
    )
    interval: float = opt.option(
        2.0, flags=("--interval",), convert=float, example="2", help="seconds between probes"
    )
