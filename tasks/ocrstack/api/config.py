"""``ocrstack api serve`` settings (:class:`ServiceConfig`), importable without the ``api`` extra.

:class:`ServiceConfig` declares the ``ocrstack api serve`` settings once (:mod:`ocrstack.core.options`:
each field's flag, default, range and help; the command derives its flags from them, beside the
service defaults of the parse options, which :mod:`ocrstack.parsing.options` marks ``SERVICE``).
``ocrstack --help`` builds every verb's parser, and the ``api`` verb shows these defaults, so
this module (and everything it imports) must not import FastAPI, Starlette, uvicorn or
python-multipart: with only ``.[sdk]`` or no extra installed the CLI must still start
(issue 24 item 2; tests/test_extras.py).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.api.store import POOL_SIZE
from ocrstack.api.stores import DATABASE_ENV
from ocrstack.core import options as opt
from ocrstack.core.errors import ConfigError
from ocrstack.parsing.options import ParseOptions
from ocrstack.scaleout.options import DEFAULT_TTL

#: Import names of the ``api`` extra's packages (pyproject ``[project.optional-dependencies] api``).
API_EXTRA = ("fastapi", "uvicorn", "python_multipart")


#: Environment variable read when ``--api-key`` is absent (keeps the key out of ``ps`` output).
API_KEY_ENV = "OCRSTACK_API_KEY"
#: Environment variable read when ``--webhook-secret`` is absent.
WEBHOOK_SECRET_ENV = "OCRSTACK_WEBHOOK_SECRET"
#: ``--parse-nice`` default: nice 10 weighs 110 against 1024 at nice 0 (the kernel's
#: ``sched_prio_to_weight``), so an API thread that wakes gets the CPU ahead of the parse work.
PARSE_NICE = 10


@dataclass
class ServiceConfig:
    """``ocrstack api serve`` settings, each declared once (flag, default, range, help).

    ``base`` holds the service defaults of every job (the parse options marked ``SERVICE``, built by
    :func:`ocrstack.api.options.service_defaults`); ``ray`` and ``ray_pool_ttl`` come from ``--ray`` /
    ``--ray-address`` and ``--ray-pool-ttl`` (:mod:`ocrstack.scaleout.options`); ``retry_after`` is
    no flag.
    """

    host: str = opt.option(
        "127.0.0.1", flags=("--host",), help="bind address (default: {default}; others need --api-key)"
    )
    port: int = opt.option(
        8800,
        flags=("--port",),
        convert=int,
        example="8800",
        help="port, 0 = any free one (default: {default})",
    )
    data_dir: Path = opt.option(
        Path(".ocrstack/api"),
        flags=("--data-dir",),
        metavar="DATA_DIR",
        convert=opt.path,
        help="jobs database and files ({default})",
    )
    api_key: str | None = opt.option(
        None,
        flags=("--api-key",),
        env=API_KEY_ENV,
        secret=True,
        help=f"require this key (default: ${API_KEY_ENV}; never logged)",
    )
    database: str | None = opt.option(
        None,
        flags=("--database",),
        env=DATABASE_ENV,
        secret=True,
        metavar="URL",
        help=f"postgresql://... job store shared by N replicas (default: ${DATABASE_ENV}, "
        "else SQLite in --data-dir; never logged)",
    )
    lease_seconds: float = opt.option(
        30.0,
        flags=("--lease-seconds",),
        convert=float,
        above=0,
        example="30",
        help="PostgreSQL: a dead replica's job is resumed elsewhere after this ({default:g})",
    )
    db_pool: int = opt.option(
        POOL_SIZE,
        flags=("--db-pool",),
        convert=int,
        minimum=1,
        example="5",
        help="PostgreSQL: most connections of this replica ({default})",
    )
    workers: int = opt.option(
        1, flags=("--workers",), convert=int, minimum=1, example="1", help="jobs parsed at once ({default})"
    )
    parse_nice: int = opt.option(
        PARSE_NICE,
        flags=("--parse-nice",),
        convert=int,
        minimum=0,
        example="10",
        help="jobs parse in a child process per worker at this lower CPU priority, so requests "
        "are answered first (0-19; {default}; not with --ray)",
    )
    max_queue: int = opt.option(
        100,
        flags=("--max-queue",),
        convert=int,
        minimum=1,
        example="100",
        help="queued+running jobs; more -> 429 ({default})",
    )
    max_upload_mb: float = opt.option(
        100.0,
        flags=("--max-upload-mb",),
        convert=float,
        above=0,
        example="100",
        help="upload limit -> 413 ({default:g})",
    )
    max_pages: int = opt.option(
        500, flags=("--max-pages",), convert=int, minimum=1, example="500", help="pages per job ({default})"
    )
    sync_max_pages: int = opt.option(
        10,
        flags=("--sync-max-pages",),
        convert=int,
        minimum=1,
        example="10",
        help="pages for POST /v1/parse ({default})",
    )
    sync_timeout: float = opt.option(
        120.0,
        flags=("--sync-timeout",),
        convert=float,
        above=0,
        example="120",
        help="seconds POST /v1/parse waits ({default:g})",
    )
    ttl_hours: float = opt.option(
        24.0,
        flags=("--ttl-hours",),
        convert=float,
        above=0,
        example="24",
        help="keep finished jobs this long ({default:g})",
    )
    cors_origins: tuple[str, ...] = opt.option(
        (),
        flags=("--cors-origin",),
        many=True,
        metavar="ORIGIN",
        help="allow this origin (CORS off by default)",
    )
    allowed_hosts: tuple[str, ...] = opt.option(
        (),
        flags=("--allowed-host",),
        many=True,
        metavar="NAME",
        help="answer requests whose Host is NAME too (besides --host, localhost, 127.0.0.1, ::1); "
        "repeat (others -> 400)",
    )
    private_docs: bool = opt.option(
        False,
        flags=("--key-for-metrics-and-docs",),
        help="with --api-key, /metrics, /docs and /openapi.json want the key too (default: open; "
        "issue 25 item 10)",
    )
    webhook_hosts: tuple[str, ...] = opt.option(
        (),
        flags=("--webhook-host",),
        many=True,
        metavar="HOST[:PORT]",
        help="a job's callback_url may name this host; repeat (default: none, no callbacks)",
    )
    webhook_secret: str | None = opt.option(
        None,
        flags=("--webhook-secret",),
        env=WEBHOOK_SECRET_ENV,
        secret=True,
        help=f"HMAC-SHA256 key signing callbacks (default: ${WEBHOOK_SECRET_ENV}; never logged)",
    )
    # -- bounds on what one request may ask for (issue 25 item 2): a request's value above its bound
    # is refused (400 naming the field and the flag); the service defaults are the operator's own
    max_dpi: int = opt.option(
        600,
        flags=("--max-dpi",),
        convert=int,
        minimum=1,
        example="600",
        help="largest dpi a job may ask ({default})",
    )
    max_request_pixels: int = opt.option(
        100_000_000,
        flags=("--max-request-pixels",),
        convert=int,
        minimum=1,
        example="100000000",
        help="largest max_pixels (pixels per rendered page) a job may ask ({default})",
    )
    max_retries: int = opt.option(
        10,
        flags=("--max-retries",),
        convert=int,
        minimum=0,
        example="10",
        help="most retries a job may ask ({default})",
    )
    max_request_timeout: float = opt.option(
        3600.0,
        flags=("--max-request-timeout",),
        convert=float,
        above=0,
        example="3600",
        help="longest request_timeout, ready_timeout or progress_timeout a job may ask, s ({default:g})",
    )
    max_concurrency: int = opt.option(
        16,
        flags=("--max-concurrency",),
        convert=int,
        minimum=1,
        example="16",
        help="most in-flight recognizer requests per server a job may ask ({default})",
    )
    max_request_tokens: int = opt.option(
        16384,
        flags=("--max-request-tokens",),
        convert=int,
        minimum=1,
        example="16384",
        help="largest max_tokens a job may ask ({default})",
    )
    retry_after: int = 5
    base: ParseOptions = field(default_factory=lambda: ParseOptions(inputs=()))
    #: ``--ray`` (``local``) / ``--ray-address ADDRESS``: jobs' pages run on Ray
    #: (:class:`ocrstack.scaleout.RayExecutor`); None: here.
    ray: str | None = None
    #: ``--ray-pool-ttl``: idle seconds before the jobs' kept Ray actors end (0: each job's end).
    ray_pool_ttl: float = DEFAULT_TTL


#: Request-settable number (ParseOptions field) -> the ServiceConfig field bounding it. ``limit`` is
#: bounded by ``--max-pages`` instead (a job's page count); tests check that every request-settable
#: number is in one of the two.
REQUEST_BOUNDS = {
    "dpi": "max_dpi",
    "max_pixels": "max_request_pixels",
    "retries": "max_retries",
    "request_timeout": "max_request_timeout",
    "ready_timeout": "max_request_timeout",
    "progress_timeout": "max_request_timeout",
    "concurrency": "max_concurrency",
    "max_tokens": "max_request_tokens",
}


def request_bounds(config: ServiceConfig) -> dict[str, tuple[float, str]]:
    """Request-settable field -> ``(largest value a request may give, api serve flag setting it)``."""
    flags = {f.name: opt.flag_name(f, s) for f, s in opt.specs(ServiceConfig)}
    return {name: (getattr(config, bound), flags[bound]) for name, bound in REQUEST_BOUNDS.items()}


def require_api_extra() -> None:
    """Check that the ``api`` extra is installed before a verb starts the service.

    Raises:
        ConfigError: (exit 9) a package of :data:`API_EXTRA` is not importable; the fix names
            the install command (instead of a traceback from deep inside the app).
    """
    for name in API_EXTRA:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(
                f"the HTTP service needs the api extra ({exc})", "install it: pip install 'ocrstack[api]'"
            ) from exc
