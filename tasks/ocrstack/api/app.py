"""The FastAPI app: the routes of :mod:`ocrstack.api.jobs` and :mod:`ocrstack.api.probes` around one
:class:`~ocrstack.api.service.Service` (store, metrics, worker). No parsing logic here.

Errors: every :class:`ocrstack.core.errors.OcrstackError` becomes a 4xx JSON ``{"error", "fix"}``
with the CLI's one-line message (:data:`ocrstack.api.schemas.STATUS`); a 5xx only for a bug. Routes
under ``/v1`` need the API key when one is configured (header ``X-API-Key`` or
``Authorization: Bearer``, compared with :func:`hmac.compare_digest`, never logged).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ocrstack.api import jobs, origins, probes
from ocrstack.api.config import ServiceConfig
from ocrstack.api.docs import add_docs
from ocrstack.api.metrics import Metrics
from ocrstack.api.schemas import install_handlers
from ocrstack.api.service import Service, check_key
from ocrstack.api.stores import open_store
from ocrstack.api.worker import Worker


def _executor_factory(address: str | None, pool_ttl: float) -> Callable[[], Any] | None:
    """Each job's page executor for ``--ray`` (Ray imported only then), or None; the jobs share
    one Ray and, between jobs of the same engine settings, its page actors (``pool_ttl``)."""
    if address is None:
        return None
    from ocrstack.scaleout import RayExecutor

    return lambda: RayExecutor(address, keep_ray=True, pool_ttl=pool_ttl)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Start the worker with the app; stop it and close the store when the app stops."""
    svc: Service = app.state.service
    svc.worker.start()
    yield
    await asyncio.to_thread(svc.worker.stop)
    svc.store.close()


#: The request methods of RFC 9110 section 9 plus PATCH (RFC 5789): the only ``method`` label values.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})


class _Counted:
    """ASGI middleware: requests in flight, and per method, route and status their count and
    seconds (until the answer's last byte). Plain ASGI, as the two below: Starlette's
    ``@app.middleware("http")`` runs each request through extra tasks and streams, which took 0.4
    of the 1.1 ms of CPU a status request cost (measured beside ``ocrstack api replicas``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        metrics: Metrics = scope["app"].state.service.metrics
        metrics.in_flight.inc()
        t0 = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            # a client picks the method: one label for every method HTTP does not define (issue 25 item 8)
            method = scope["method"] if scope["method"] in METHODS else "other"
            metrics.in_flight.dec()
            metrics.requests.labels(method, route, str(status)).inc()
            metrics.request_seconds.labels(method, route).observe(time.perf_counter() - t0)


#: Headers on every answer (issue 25 item 10): no MIME sniffing of results, no framing of the web
#: page or the docs by another site (clickjacking), no plugins, no <base> rewriting, no Referer
#: leaving with a job URL. Scripts are not restricted here: the docs page runs Swagger UI's inline
#: start-up script (the web page's own scripts are same-origin files).
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'; object-src 'none'; base-uri 'none'",
    "Referrer-Policy": "no-referrer",
}


class _Secured:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every answer (those a route set itself are kept)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, sending)


#: Paths that ``--key-for-metrics-and-docs`` puts behind the API key (open by default: scrapers
#: and browsers often carry no key).
PRIVATE_PATHS = ("/metrics", "/docs", "/openapi.json")


class _Private:
    """ASGI middleware (``--key-for-metrics-and-docs``): :data:`PRIVATE_PATHS` answer 401 without the key."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PRIVATE_PATHS):
            try:
                check_key(Request(scope))
            except HTTPException as exc:
                body = {"error": exc.detail, "fix": "send the key in X-API-Key"}
                return await JSONResponse(body, 401, exc.headers)(scope, receive, send)
        await self.app(scope, receive, send)


def create_app(config: ServiceConfig) -> FastAPI:
    """Build the app with its store, metrics and worker (started/stopped with the app's lifespan)."""
    store = open_store(
        config.database,
        config.data_dir,
        max_queue=config.max_queue,
        ttl=config.ttl_hours * 3600,
        lease=config.lease_seconds,
        pool=config.db_pool,
    )
    metrics = Metrics(store.counts)
    worker = Worker(
        store,
        metrics,
        config.base,
        threads=config.workers,
        executor=_executor_factory(config.ray, config.ray_pool_ttl),
        webhook_secret=config.webhook_secret,
        webhook_hosts=config.webhook_hosts,
        nice=None if config.ray else config.parse_nice,  # with --ray the pages run on Ray's workers
    )
    app = FastAPI(
        title="ocrstack",
        version="1",
        lifespan=_lifespan,
        description="Parse PDFs and images into Markdown and layout blocks (issue 12).",
        docs_url=None,  # served from local assets by add_docs (the defaults load from CDNs)
        redoc_url=None,
    )
    app.state.service = Service(config=config, store=store, metrics=metrics, worker=worker)
    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(config.cors_origins), allow_methods=["*"], allow_headers=["*"]
        )
    app.add_middleware(_Counted)
    if config.private_docs and config.api_key:
        app.add_middleware(_Private)
    app.add_middleware(_Secured)  # outside the others: their answers get the headers too
    hosts = origins.allowed_hosts(config.host, config.allowed_hosts)
    app.add_middleware(origins.OriginGuard, hosts=hosts, origins=config.cors_origins)  # outermost
    install_handlers(app, config.max_queue, config.retry_after)
    app.include_router(jobs.router)
    app.include_router(probes.router)
    app.mount("/static", StaticFiles(directory=probes.STATIC), name="static")
    add_docs(app)
    return app
