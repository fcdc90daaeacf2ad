"""Options of ``ocrstack verify``, each declared once (:mod:`ocrstack.core.options`).

``ocrstack.commands.verify`` derives its flags (in their help groups) from :class:`VerifyOptions`
and builds it from them; Python callers construct it directly with the same defaults.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError
from ocrstack.versions.endpoints import default_model

OUTPUT = "output checks (guide 6)"
DSPARK = "DSpark (guide 6)"
TWO_BACKENDS = "two-backend verbatim check (guide 7)"
_MM_EXAMPLE = 'e.g. \'{"downsample_mode":"4x"}\''


def server(value: str) -> tuple[str, str]:
    """Converter for ``--server-url URL[=MODEL]``: ``(url, served model)``, the model defaulting
    to ``envs/versions.yaml``.

    Raises:
        UsageError: not an ``http(s)://`` URL.
    """
    url, sep, model = value.partition("=")
    if not url.startswith(("http://", "https://")):
        raise UsageError(
            f"--server-url {value!r}: expected http(s)://HOST:PORT[=MODEL]",
            "e.g. --server-url http://127.0.0.1:18499=minicpm-ocr",
        )
    return url, model if sep and model else default_model()


def json_object(value: str) -> tuple[tuple[str, Any], ...]:
    """Converter for ``--mm-processor-kwargs``: a JSON object as sorted ``(key, value)`` pairs.

    Raises:
        UsageError: not JSON, or JSON that is no object.
    """
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--mm-processor-kwargs: not JSON ({exc})", _MM_EXAMPLE) from exc
    if not isinstance(parsed, dict):
        raise UsageError("--mm-processor-kwargs must be a JSON object", _MM_EXAMPLE)
    return tuple(sorted(parsed.items()))


def kind(value: str) -> bool:
    """Converter for ``--kind table|other``: whether the sample is a table (its answer must end
    with ``</otsl>``).

    Raises:
        ValueError: another word (reported as a usage error naming ``--kind``).
    """
    if value not in ("table", "other"):
        raise ValueError(value)
    return value == "table"


@dataclass(frozen=True)
class VerifyOptions:
    """Options of ``ocrstack verify`` (defaults here only).

    Attributes beyond the flags' help: ``use_blocks`` False (``--no-blocks``) ignores the blocks
    file; ``table`` None lets the prompt decide (a prompt mentioning OTSL is a table prompt);
    ``servers`` are ``(url, served model)`` pairs (transformers serve, vLLM);
    ``server_timeout`` is the seconds a server has to answer (readiness of the ``tiny`` server,
    requests); ``tf_server`` is ``(model_dir, run_dir, timeout) -> context manager yielding
    (url, served model)`` that runs ``transformers serve`` for ``tiny``, handed in by the commands
    layer (:func:`ocrstack.serving.ephemeral.transformers_server`) so verifying imports no other
    stage.
    """

    markdown: Path | None = opt.option(
        None, flags=("--markdown",), convert=Path, group=OUTPUT, help="Markdown written by the parser"
    )
    expect: tuple[str, ...] = opt.option(
        (),
        flags=("--expect",),
        many=True,
        metavar="KIND[@PAGES]",
        group=OUTPUT,
        help="table, formula or text, optionally on pages, e.g. table@2,3 (repeatable); "
        "replaces that kind's pages read from the blocks file, other kinds add to them",
    )
    blocks: Path | None = opt.option(
        None,
        flags=("--blocks",),
        convert=Path,
        group=OUTPUT,
        help="blocks file to read table/formula/text pages from "
        "(default: NAME.blocks.json beside the Markdown, when present)",
    )
    use_blocks: bool = opt.option(
        True,
        flags=("--no-blocks",),
        group=OUTPUT,
        help="ignore the blocks file; only --expect says what to check",
    )
    dspark_url: str | None = opt.option(
        None, flags=("--dspark-url",), group=DSPARK, help="DSpark vLLM server, e.g. http://127.0.0.1:18499"
    )
    dspark_model: str = opt.option(
        default_factory=default_model,
        flags=("--dspark-model",),
        group=DSPARK,
        help="served model name (default: versions.yaml)",
    )
    dspark_requests: int = opt.option(
        3,
        flags=("--dspark-requests",),
        convert=int,
        group=DSPARK,
        help="requests sent between the two /metrics scrapes",
    )
    tiny: bool = opt.option(
        False,
        flags=("--tiny",),
        group=TWO_BACKENDS,
        help="CI self-test on CPU: a tiny RANDOM checkpoint in-process vs a real `transformers serve` "
        "of it; shows the comparison works, does not check your model or server",
    )
    image: Path | None = opt.option(
        None,
        flags=("--image",),
        convert=Path,
        group=TWO_BACKENDS,
        help="image for both backends (guide 7: table.png)",
    )
    prompt: str | None = opt.option(
        None, flags=("--prompt",), group=TWO_BACKENDS, help="prompt (default: the guide 7 OTSL table prompt)"
    )
    table: bool | None = opt.option(
        None,
        flags=("--kind",),
        metavar="{table,other}",
        convert=kind,
        example="table",
        group=TWO_BACKENDS,
        help="table prompts must end with </otsl> (default: table when the prompt mentions OTSL)",
    )
    tf_model: Path | None = opt.option(
        None,
        flags=("--tf-model",),
        convert=Path,
        group=TWO_BACKENDS,
        help="checkpoint for the in-process transformers side",
    )
    servers: tuple[tuple[str, str], ...] = opt.option(
        (),
        flags=("--server-url",),
        many=True,
        convert=server,
        metavar="URL[=MODEL]",
        group=TWO_BACKENDS,
        help="OpenAI-compatible server (repeatable); MODEL = served model name (default: versions.yaml)",
    )
    reference: bool = opt.option(
        False,
        flags=("--reference",),
        group=TWO_BACKENDS,
        help="the image is the guide's 1080x1080 table image: also compare with guide 7's reference values",
    )
    max_new_tokens: int | None = opt.option(
        None,
        flags=("--max-new-tokens",),
        convert=int,
        group=TWO_BACKENDS,
        help="generation cap (default 512; 32 with --tiny)",
    )
    device: str = opt.option(
        "auto", flags=("--device",), group=TWO_BACKENDS, help="in-process device: auto, cpu, cuda"
    )
    dtype: str = opt.option(
        "auto",
        flags=("--dtype",),
        group=TWO_BACKENDS,
        help="in-process dtype (default: auto, like transformers serve)",
    )
    attn: str | None = opt.option(
        None,
        flags=("--attn",),
        group=TWO_BACKENDS,
        help="in-process attention implementation (guide 7: sdpa)",
    )
    mm_kwargs: tuple[tuple[str, Any], ...] = opt.option(
        (),
        flags=("--mm-processor-kwargs",),
        metavar="JSON",
        convert=json_object,
        group=TWO_BACKENDS,
        help='image-processor settings for both sides, e.g. \'{{"downsample_mode":"4x"}}\' (guide 4.1)',
    )
    work_dir: Path = opt.option(
        Path(".ocrstack") / "verify", flags=("--work-dir",), convert=Path, help="tiny checkpoint and logs"
    )
    report_dir: Path | None = opt.option(
        None, flags=("--report-dir",), convert=Path, help="write verify-report.json/.txt here"
    )
    server_timeout: float = 600.0
    tf_server: Callable[[Path, Path, float], AbstractContextManager[tuple[str, str]]] | None = field(
        default=None, repr=False, compare=False
    )
