"""The service's settings and running state, handed to every route.

:class:`ServiceConfig` declares the ``ocrstack api serve`` settings once (:mod:`ocrstack.core.options`:
each field's flag, default, range and help; the command derives its flags from them, beside the
service defaults of the parse options, which :mod:`ocrstack.parsing.options` marks ``SERVICE``).
:class:`Service` is what the routes share at run time (config, job store, metrics, worker): it lives
in ``app.state.service`` and reaches a route through the :func:`service` dependency, so no route
closes over variables of :func:`ocrstack.api.app.create_app`. :func:`authorize` is the API-key
check of every ``/v1`` route.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from starlette.exceptions import HTTPException

from ocrstack.api.metrics import Metrics
from ocrstack.api.store import JobStore
from ocrstack.api.worker import Worker
from ocrstack.core import options as opt
from ocrstack.parsing.options import ParseOptions

#: Environment variable read when ``--api-key`` is absent (keeps the key out of ``ps`` output).
API_KEY_ENV = "OCRSTACK_API_KEY"


@dataclass
class ServiceConfig:
    """``ocrstack api serve`` settings, each declared once (flag, default, range, help).

    ``base`` holds the service defaults of every job (the parse options marked ``SERVICE``, built by
    :func:`ocrstack.api.options.service_defaults`); ``ray`` comes from ``--ray``
    (:mod:`ocrstack.scaleout.options`); ``retry_after`` is no flag.
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
    workers: int = opt.option(
        1, flags=("--workers",), convert=int, minimum=1, example="1", help="jobs parsed at once ({default})"
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
        example="120",
        help="seconds POST /v1/parse waits ({default:g})",
    )
    ttl_hours: float = opt.option(
        24.0,
        flags=("--ttl-hours",),
        convert=float,
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
    retry_after: int = 5
    base: ParseOptions = field(default_factory=lambda: ParseOptions(inputs=()))
    #: ``--ray ADDRESS``: jobs' pages run on Ray (:class:`ocrstack.scaleout.RayExecutor`); None: here.
    ray: str | None = None


@dataclass(frozen=True)
class Service:
    """What the routes share: the settings, the job store, the metrics and the worker."""

    config: ServiceConfig
    store: JobStore
    metrics: Metrics
    worker: Worker


def service(request: Request) -> Service:
    """FastAPI dependency: the :class:`Service` of the app serving ``request``."""
    return request.app.state.service


#: A route parameter annotated so receives the :class:`Service` (``svc: ServiceDep``).
ServiceDep = Annotated[Service, Depends(service)]


def authorize(request: Request) -> None:
    """FastAPI dependency of the ``/v1`` routes: the configured API key, from header ``X-API-Key``
    or ``Authorization: Bearer``, compared in constant time (:func:`hmac.compare_digest`).

    Raises:
        HTTPException: 401 with ``WWW-Authenticate: Bearer`` when a key is configured and the
            request does not carry it.
    """
    key = service(request).config.api_key
    if not key:
        return
    given = request.headers.get("x-api-key") or ""
    auth = request.headers.get("authorization") or ""
    if not given and auth.lower().startswith("bearer "):
        given = auth[7:].strip()
    if not hmac.compare_digest(given.encode(), key.encode()):
        raise HTTPException(401, "missing or wrong API key", headers={"WWW-Authenticate": "Bearer"})
