"""Options of ``ocrstack parse``, each declared once (:mod:`ocrstack.core.options`).

Per-engine settings live in their own classes with a ``kind`` (docling's ``pipeline_options.py``):
:class:`LayoutOptions` (``--layout``, ``--layout-model``) and :class:`OpenAIOptions` (the ``openai``
recognizer: servers, served model name, prompts, concurrency, timeout, retries, max tokens, key).
:class:`ParseOptions` is their flat union plus the document/output options, because the CLI flags
and HTTP form fields are flat; an engine takes its own class out of it with :meth:`EngineOptions.of`
(a generic projection by field name, nothing copied by hand).

Derived from the declarations: the ``parse`` argparse arguments (:func:`add_arguments`), the object
from parsed arguments or from strings (:func:`from_mapping`, for the HTTP API), validation
(:func:`ocrstack.core.options.validate`, run by :func:`ocrstack.parsing.run.pipeline.run` for every
caller) and the cache-key values (:func:`ocrstack.core.options.cache_values`).

Precedence: declared defaults < environment (``OCR_LAYOUT_MODEL_DIR``) < CLI flags / mapping.
The served model name and URL default to ``envs/versions.yaml`` (:mod:`ocrstack.versions.endpoints`;
guide 4.1: the name must match the server's ``--served-model-name``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ocrstack.client import defaults
from ocrstack.core import options as opt
from ocrstack.parsing.engines import kinds
from ocrstack.versions.endpoints import default_model, default_server_url

#: Environment variable naming the layout checkpoint / inference directory (issue 3).
LAYOUT_MODEL_ENV = "OCR_LAYOUT_MODEL_DIR"

E = TypeVar("E", bound="EngineOptions")

# Where each option may be set (Spec.where; the reason beside each): ocrstack.api takes the REQUEST
# ones as form fields, ``api serve`` the SERVICE ones as flags. A request never sets a server path,
# an API key, server URLs outside the operator's list, or which files a job writes.
ANYWHERE = (opt.CLI, opt.SERVICE, opt.REQUEST)
SERVICE_DEFAULT = (opt.CLI, opt.SERVICE)
PER_DOCUMENT = (opt.CLI, opt.REQUEST)
CLI_ONLY = (opt.CLI,)


class TextLayerMode(str, Enum):
    """The ``--text-layer`` modes, the one place their strings are spelled: the values are the CLI
    choices, the HTTP form values and the cache-key strings. ``auto`` uses a page's layer where
    it is measured sound (and the font sample agrees), ``on`` wherever it is present (an OCR layer
    over a scan too; the reasons are kept as "used anyway"), ``off`` never (OCR every page).

    A mode compares equal to its string (``"on" == TextLayerMode.ON``), so options carry the plain
    string and code compares against these members (:mod:`ocrstack.parsing.textlayer.stage`,
    :mod:`ocrstack.parsing.stages`).
    """

    AUTO = "auto"
    ON = "on"
    OFF = "off"


def _layouts() -> list[str]:
    return list(kinds.LAYOUTS)


def _recognizers() -> list[str]:
    return list(kinds.RECOGNIZERS)


def prompt_ref(value: str) -> str:
    """Converter for ``--prompts``: a set name stays as is; a YAML file or a path becomes absolute."""
    if Path(value).suffix in (".yaml", ".yml") or os.sep in value:
        return str(opt.path(value))
    return value


def prompts_fingerprint(prompts: str) -> str:
    """The prompt set name, or for a file the sha256 of its content (so an edited file recomputes)."""
    p = Path(prompts)
    if p.is_file():
        return "file:" + hashlib.sha256(p.read_bytes()).hexdigest()
    return prompts


@dataclass(frozen=True, kw_only=True)
class EngineOptions:
    """Base of the per-engine option classes; ``kind`` names the engine they configure."""

    kind: ClassVar[str] = ""

    @classmethod
    def of(cls: type[E], options: Any) -> E:
        """This engine's options taken out of ``options`` (fields of the same name)."""
        return opt.project(options, cls)


@dataclass(frozen=True, kw_only=True)
class LayoutOptions(EngineOptions):
    """Layout provider choice and its model directory."""

    kind: ClassVar[str] = "layout"

    layout: str = opt.option(
        "rapid-layout",
        flags=("--layout",),
        metavar="KIND",
        choices=_layouts,
        cache=True,
        help="layout provider: {choices} (default: {default})",
        where=ANYWHERE,  # request: a choice among the built-in providers
    )
    layout_model: Path | None = opt.option(
        None,
        flags=("--layout-model",),
        metavar="DIR",
        convert=opt.path,
        env=LAYOUT_MODEL_ENV,
        cache=True,
        help=f"checkpoint/inference dir for pp-doclayout-v3 or paddlex (default: ${LAYOUT_MODEL_ENV})",
        where=SERVICE_DEFAULT,  # never per request: a directory on the server (security rule of the HTTP API)
    )


@dataclass(frozen=True, kw_only=True)
class OpenAIOptions(EngineOptions):
    """The ``openai`` recognizer: any OpenAI-compatible chat-completions server (guide 4/5/8).

    ``api_key`` (``--api-key``; else ``$OPENAI_API_KEY`` when the recognizer is made) is excluded
    from ``repr`` and never written to outputs or logs.
    """

    kind: ClassVar[str] = "openai"

    server_urls: tuple[str, ...] = opt.option(
        default_factory=lambda: (default_server_url(),),
        flags=("--server-url",),
        many=True,
        metavar="URL",
        show=lambda urls: urls[0],
        help="OpenAI-compatible endpoint; repeat for several (default: {default})",
        where=ANYWHERE,  # request: only the service's own URLs (ocrstack.api.options checks)
    )
    model: str = opt.option(
        default_factory=default_model,
        flags=("--model",),
        cache="engine",
        help="served model name (default: {default})",
        where=ANYWHERE,  # request: a name sent to the operator's servers
    )
    prompts: str = opt.option(
        "minicpm-ocr",
        flags=("--prompts",),
        metavar="NAME|FILE",
        convert=prompt_ref,
        cache="engine",
        cache_form=prompts_fingerprint,
        help="prompt set name or YAML file (default: {default})",
        where=ANYWHERE,  # request: built-in prompt set names only, never a file (ocrstack.api.options checks)
    )
    concurrency: int = opt.option(
        defaults.CONCURRENCY,
        flags=("--concurrency",),
        convert=int,
        minimum=1,
        example="4",
        help="in-flight requests per server (default: {default})",
        where=ANYWHERE,  # request: bounded per job by the operator's servers, like the timeouts below
    )
    request_timeout: float = opt.option(
        defaults.REQUEST_TIMEOUT,
        flags=("--timeout",),
        convert=float,
        above=0,
        example="600",
        help="seconds per request (default: {default:g})",
        where=ANYWHERE,  # request: how long this job waits for the operator's servers
    )
    retries: int = opt.option(
        defaults.RETRIES,
        flags=("--retries",),
        convert=int,
        minimum=0,
        example="3",
        help="failures of one block (a burst of errors counts once; never a 4xx) before it is marked "
        "failed and the document partial (default: {default})",
        where=ANYWHERE,  # request: how often this job retries a block
    )
    ready_timeout: float = opt.option(
        30.0,
        flags=("--ready-timeout",),
        convert=float,
        minimum=0,
        example="300",
        help="seconds to wait before the first page for a server that is still starting (connection "
        "refused, 503); 0 fails at once (default: {default:g})",
        where=ANYWHERE,  # request: how long this job waits for a starting server
    )
    progress_timeout: float = opt.option(
        defaults.PROGRESS_TIMEOUT,
        flags=("--progress-timeout",),
        convert=float,
        above=0,
        example="600",
        help="seconds without an answer from any server (servers are re-checked meanwhile) before "
        "the run gives up (default: {default:g} = 10 minutes)",
        where=ANYWHERE,  # request: when this job gives up on silent servers
    )
    routing: str = opt.option(
        "auto",
        flags=("--routing",),
        choices=defaults.MODES,
        help="where blocks go: auto (least loaded by each server's /metrics, else our requests in "
        "flight) or inflight (default: {default})",
        where=ANYWHERE,  # request: a choice among the routing modes
    )
    max_tokens: int = opt.option(
        4096,
        flags=("--max-tokens",),
        convert=int,
        minimum=1,
        example="4096",
        cache="engine",
        help="generation cap per block (default: {default})",
        where=ANYWHERE,  # request: the generation cap of this job's blocks
    )
    api_key: str | None = opt.option(
        None,
        flags=("--api-key",),
        secret=True,
        help="bearer token for --recognizer openai (default: $OPENAI_API_KEY; never logged)",
        where=CLI_ONLY,  # a service reads $OPENAI_API_KEY at startup; a request never sets or sees it
    )


@dataclass(frozen=True, kw_only=True)
class ParseOptions(OpenAIOptions, LayoutOptions):
    """Everything ``ocrstack parse`` needs; built by the CLI (or :func:`from_mapping`), checked by
    :func:`validate`, passed to :mod:`ocrstack.parsing.run.pipeline`.

    ``inputs`` are files or directories (the CLI makes relative paths absolute against the cwd);
    every other field is an option declared below or in the engine classes it inherits.
    """

    kind: ClassVar[str] = "parse"

    inputs: tuple[Path, ...]
    output: Path = opt.option(
        Path("out"),
        flags=("-o", "--output"),
        convert=opt.path,
        help="output directory (default: {default})",
        where=CLI_ONLY,  # command line only: the service gives every job its own output directory
    )
    pages: str | None = opt.option(
        None,
        flags=("--pages",),
        help="1-based page selection, e.g. 1-3,7 (default: all)",
        where=PER_DOCUMENT,  # per document: the command line or a request, no service default
    )
    dpi: int = opt.option(
        200,
        flags=("--dpi",),
        convert=int,
        above=0,
        example="200",
        cache=True,
        help="PDF render resolution (default: {default})",
        where=ANYWHERE,  # request: a number with a declared range
    )
    text_layer: str = opt.option(
        TextLayerMode.AUTO.value,
        flags=("--text-layer",),
        metavar="MODE",
        choices=tuple(m.value for m in TextLayerMode),
        cache=True,
        help="the PDF's own text instead of OCR: auto (where measured sound, per page), on (wherever "
        "present, an OCR layer over a scan too), off (OCR every page) (default: {default})",
        where=ANYWHERE,  # request: a choice among auto/on/off
    )
    recognizer: str = opt.option(
        "rapidocr",
        flags=("--recognizer",),
        metavar="KIND",
        choices=_recognizers,
        cache=True,
        help="recognizer: {choices} (default: {default})",
        where=ANYWHERE,  # request: a choice among the built-in recognizers
    )
    ocr_runtime: str = opt.option(
        "onnxruntime",
        flags=("--ocr-runtime",),
        metavar="RUNTIME",
        choices=("onnxruntime", "openvino"),
        cache="engine",
        help="runtime of the embedded recognizer's text model: onnxruntime, or openvino (bfloat16 "
        "where the CPU computes it: 1.7x the recognizer, a few readings differ) "
        "(default: {default})",
        where=ANYWHERE,  # request: a choice among the built-in runtimes
    )
    limit: int | None = opt.option(
        None,
        flags=("--limit",),
        convert=int,
        minimum=1,
        example="1",
        help="parse at most N pages per input",
        where=PER_DOCUMENT,  # per document: the command line or a request, no service default
    )
    max_pixels: int = opt.option(
        40_000_000,
        flags=("--max-pixels",),
        convert=int,
        minimum=1,
        example="40000000",
        cache=True,
        help="pixel budget per rendered page; larger pages are scaled down (default: {default})",
        where=ANYWHERE,  # request: a number with a declared range (the pixel budget of this job's pages)
    )
    # per document: the command line or a request, no service default
    password: str | None = opt.option(
        None, flags=("--password",), secret=True, help="PDF user password", where=PER_DOCUMENT
    )
    # command line only: the service overwrites a job's own outputs itself
    force: bool = opt.option(
        False, flags=("--force",), help="overwrite existing finished outputs", where=CLI_ONLY
    )
    keep_paratext: bool = opt.option(
        False,
        flags=("--keep-paratext",),
        cache="engine",
        help="keep headers, footers and page numbers",
        where=ANYWHERE,  # request: changes only this job's Markdown
    )
    lock_timeout: float = opt.option(
        600.0,
        flags=("--lock-timeout",),
        metavar="SECONDS",
        convert=float,
        minimum=0,
        example="600",
        help="how long to wait for an output document another parse run is writing; 0: do not "
        "wait, report it as held (default: {default})",
        where=SERVICE_DEFAULT,  # each job has its own output directory: only the operator tunes this
    )
    save_layout_images: bool = opt.option(
        False,
        flags=("--save-layout-images",),
        help="write per-page layout overlay PNGs",
        where=CLI_ONLY,  # command line only: the service decides which files a job writes
    )
    cache_dir: Path | None = opt.option(
        None,
        flags=("--cache-dir",),
        metavar="DIR",
        convert=opt.path,
        help="page cache directory; on storage every node sees for --ray (default: OUT/.ocrstack-cache)",
        where=CLI_ONLY,  # a server path; a job's page cache stays in its output dir (pages done)
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every ``parse`` option (not ``INPUT`` or ``--no-progress``) to ``parser``."""
    opt.add_arguments(parser, ParseOptions)


def from_args(args: argparse.Namespace, inputs: tuple[Path, ...]) -> ParseOptions:
    """ParseOptions from parsed ``parse`` arguments (strings converted and validated here).

    Raises:
        UsageError: a value that does not convert or is out of range (flag and fix named).
    """
    return opt.build(ParseOptions, opt.namespace_values(args, ParseOptions), inputs=inputs)


def from_mapping(values: Mapping[str, Any], inputs: tuple[Path, ...] = ()) -> ParseOptions:
    """ParseOptions from a mapping of field names to strings (HTTP form fields) or typed values.

    ``{"dpi": "150", "pages": "1-2", "server_urls": "http://a,http://b", "force": "true"}``:
    strings are converted and validated by the same code as the CLI, so a bad value raises the
    same :class:`~ocrstack.core.errors.UsageError` (flag name and fix) as ``ocrstack parse``.

    Raises:
        UsageError: unknown field, unconvertible or out-of-range value.
    """
    return opt.build(ParseOptions, values, inputs=inputs)


def validate(options: ParseOptions) -> None:
    """Check every declared range and choice of ``options`` (see :func:`ocrstack.core.options.validate`).

    Raises:
        UsageError: the first bad option, e.g. ``--concurrency must be >= 1, got 0``.
    """
    opt.validate(options)
