"""The FastAPI app: parse input, call the job store / worker, answer JSON. No parsing logic here.

Errors: every :class:`ocrstack.core.errors.OcrstackError` becomes a 4xx JSON ``{"error", "fix"}``
with the CLI's one-line message (:data:`STATUS`); a 5xx only for a bug. Routes under ``/v1``
need the API key when one is configured (header ``X-API-Key`` or ``Authorization: Bearer``,
compared with :func:`hmac.compare_digest`, never logged).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from fastapi import Depends, FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException

from ocrstack.api import options as api_options
from ocrstack.api import results
from ocrstack.api.metrics import Metrics
from ocrstack.api.schemas import UPLOAD_BODY, ErrorBody, JobBody, ParseBody, errors, install_handlers
from ocrstack.api.store import TERMINAL, JobStore, QueueFull
from ocrstack.api.uploads import receive, safe_name
from ocrstack.api.worker import Worker
from ocrstack.core.errors import ConfigError, InputError, UsageError
from ocrstack.parsing import documents
from ocrstack.parsing.options import ParseOptions

log = logging.getLogger("ocrstack.api")
STATIC = Path(__file__).parent / "static"


@dataclass
class ServiceConfig:
    """``ocrstack api serve`` settings (defaults in one place; the command only parses flags)."""

    data_dir: Path = Path(".ocrstack/api")
    host: str = "127.0.0.1"
    port: int = 8800
    api_key: str | None = field(default=None, repr=False)
    max_queue: int = 100
    max_upload_mb: float = 100.0
    max_pages: int = 500
    sync_max_pages: int = 10
    sync_timeout: float = 120.0
    ttl_hours: float = 24.0
    workers: int = 1
    cors_origins: tuple[str, ...] = ()
    retry_after: int = 5
    base: ParseOptions = field(default_factory=lambda: ParseOptions(inputs=()))
    #: ``--ray ADDRESS``: jobs' pages run on Ray (:class:`ocrstack.scaleout.RayExecutor`); None: here.
    ray: str | None = None


def _executor_factory(address: str | None):  # noqa: ANN202
    """Each job's page executor for ``--ray`` (Ray imported only then), or None."""
    if address is None:
        return None
    from ocrstack.scaleout import RayExecutor

    return lambda: RayExecutor(address, keep_ray=True)  # one Ray for every job of the service


def create_app(config: ServiceConfig) -> FastAPI:
    """Build the app with its store, metrics and worker (started/stopped with the app's lifespan)."""
    store = JobStore(config.data_dir, max_queue=config.max_queue, ttl=config.ttl_hours * 3600)
    metrics = Metrics(store.counts)
    worker = Worker(
        store, metrics, config.base, threads=config.workers, executor=_executor_factory(config.ray)
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        worker.start()
        yield
        await asyncio.to_thread(worker.stop)
        store.close()

    app = FastAPI(
        title="ocrstack",
        version="1",
        lifespan=lifespan,
        description="Parse PDFs and images into Markdown and layout blocks (issue 12).",
    )
    app.state.store, app.state.worker, app.state.metrics, app.state.config = store, worker, metrics, config
    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(config.cors_origins), allow_methods=["*"], allow_headers=["*"]
        )

    @app.middleware("http")
    async def count(request: Request, call_next):  # noqa: ANN001, ANN202
        metrics.in_flight.inc()
        t0 = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            route = getattr(request.scope.get("route"), "path", "unmatched")
            metrics.in_flight.dec()
            metrics.requests.labels(request.method, route, str(status)).inc()
            metrics.request_seconds.labels(request.method, route).observe(time.perf_counter() - t0)

    install_handlers(app, config.max_queue, config.retry_after)

    def authorize(request: Request) -> None:
        if not config.api_key:
            return
        given = request.headers.get("x-api-key") or ""
        auth = request.headers.get("authorization") or ""
        if not given and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        if not hmac.compare_digest(given.encode(), config.api_key.encode()):
            raise HTTPException(401, "missing or wrong API key", headers={"WWW-Authenticate": "Bearer"})

    def job_json(job) -> dict:  # noqa: ANN001
        data = {k: getattr(job, k) for k in JobBody.model_fields if hasattr(job, k)}
        data["status"] = job.state
        if job.state == "running":
            data["pages_done"] = _cache_pages(store.out_dir(job.id))
        data["status_url"] = f"/v1/jobs/{job.id}"
        data["result_url"] = f"/v1/jobs/{job.id}/result"
        return data

    async def submit(request: Request, sync: bool) -> dict:
        if sum(store.counts()[s] for s in ("queued", "running")) >= config.max_queue:
            raise QueueFull  # before reading the body: a client sending 100 MB learns at once
        tmp = store.upload_tmp()
        up = await receive(request, tmp, int(config.max_upload_mb * 1024 * 1024))
        try:
            kind = documents._sniff(tmp) if up.size else ""
            if up.size == 0:
                raise InputError(
                    f"{up.filename or 'upload'}: file is empty (0 bytes)",
                    "re-export or re-download the document",
                )
            if kind not in ("pdf", "png", "jpeg", "tiff", "webp", "bmp"):
                raise InputError(
                    f"{up.filename or 'upload'}: not a PDF or a supported image (checked the bytes)",
                    "send a PDF, PNG, JPEG, TIFF, WebP or BMP file",
                )
            opts = api_options.from_form(
                {k: (v if k == "server_urls" else v[-1]) for k, v in up.fields.items()},
                base=config.base,
                allowed_server_urls=config.base.server_urls,
            )
            name = safe_name(up.filename, kind)
            pages = await asyncio.to_thread(_count, tmp, opts, up.filename or name)
            limit = config.sync_max_pages if sync else config.max_pages
            if pages > limit:
                fix = (
                    "use POST /v1/jobs for long documents" if sync else "split the document or select --pages"
                )
                raise InputError(f"{up.filename or name}: {pages} pages selected, the limit is {limit}", fix)
            job = store.create(
                upload=tmp,
                name=name,
                filename=up.filename or name,
                options=api_options.to_json(opts),
                pages_total=pages,
            )
        finally:
            tmp.unlink(missing_ok=True)
        worker.wake()
        return job_json(job)

    def get_job(job_id: str):  # noqa: ANN202
        job = store.get(job_id)
        if job is None:
            raise HTTPException(404, f"no job {job_id!r} (it may have expired)")
        return job

    @app.post(
        "/v1/jobs",
        status_code=202,
        response_model=JobBody,
        openapi_extra=UPLOAD_BODY,
        responses=errors(400, 401, 413, 422, 429),
        dependencies=[Depends(authorize)],
    )
    async def create_job(request: Request) -> JSONResponse:
        """Queue a document; poll ``status_url``, then fetch ``result_url``."""
        body = await submit(request, sync=False)
        return JSONResponse(body, status_code=202, headers={"Location": body["status_url"]})

    @app.post(
        "/v1/parse",
        response_model=ParseBody,
        openapi_extra=UPLOAD_BODY,
        responses={**errors(400, 401, 409, 413, 422, 429), 202: {"model": JobBody}},
        dependencies=[Depends(authorize)],
    )
    async def parse_sync(request: Request) -> JSONResponse:
        """Parse a small document and answer when done (202 with the job when over ``sync_timeout``)."""
        body = await submit(request, sync=True)
        deadline = time.monotonic() + config.sync_timeout
        while time.monotonic() < deadline:
            job = store.get(body["id"])
            if job is None or job.state in TERMINAL:
                break
            await asyncio.sleep(0.05)
        else:
            return JSONResponse(
                job_json(store.get(body["id"])), status_code=202, headers={"Location": body["status_url"]}
            )
        if job is None or job.state in ("failed", "cancelled"):
            return JSONResponse(
                {
                    "error": (job.error if job else None) or "the job was cancelled",
                    "fix": (job.fix if job else None) or "submit it again",
                },
                status_code=409,
            )
        loaded = results.load(store.out_dir(job.id))
        if loaded is None:
            return JSONResponse({"error": "no output was written", "fix": "submit it again"}, status_code=409)
        return JSONResponse({**results.seed_shape(job.state, *loaded), "job_id": job.id})

    @app.get(
        "/v1/jobs/{job_id}",
        response_model=JobBody,
        responses=errors(401, 404),
        dependencies=[Depends(authorize)],
    )
    def job_status(job_id: str) -> dict:
        """State, pages done/total and position in the queue (0 = next)."""
        return job_json(get_job(job_id))

    @app.get(
        "/v1/jobs/{job_id}/result",
        responses={
            200: {
                "content": {
                    "text/markdown": {"schema": {"type": "string"}},
                    "application/json": {},
                    "application/zip": {"schema": {"type": "string", "format": "binary"}},
                }
            },
            **errors(400, 401, 404, 409),
        },
        dependencies=[Depends(authorize)],
    )
    def job_result(job_id: str, request: Request, format: str | None = None) -> Response:  # noqa: A002
        """NAME.md (``format=markdown``), NAME.blocks.json (``json``) or a zip with figures (``zip``);
        without ``format`` the ``Accept`` header decides (default Markdown)."""
        job = get_job(job_id)
        fmt = results.pick_format(format, request.headers.get("accept"))
        if fmt is None:
            raise UsageError(f"format {format!r} is unknown", f"use one of: {', '.join(results.FORMATS)}")
        files = results.output_files(store.out_dir(job_id)) if job.state in ("done", "partial") else None
        if files is None:
            raise HTTPException(
                409,
                f"job {job_id} is {job.state}; no result yet"
                if job.state not in ("failed", "cancelled")
                else f"job {job_id} is {job.state}",
            )
        md, blocks = files
        if fmt == "markdown":
            return FileResponse(md, media_type="text/markdown; charset=utf-8")
        if fmt == "json":
            return FileResponse(blocks, media_type="application/json")
        target = results.build_zip(store.out_dir(job_id), store.job_dir(job_id) / "result.zip")
        return FileResponse(target, media_type="application/zip", filename=f"{md.stem}.zip")

    @app.get(
        "/v1/jobs/{job_id}/pages/{page}/image",
        responses={
            200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}},
            **errors(400, 401, 404, 409, 422),
        },
        dependencies=[Depends(authorize)],
    )
    def page_image(job_id: str, page: int) -> Response:
        """1-based ``page`` rendered as PNG at the job's DPI: the pixels the layout boxes refer to."""
        job = get_job(job_id)
        if job.state == "cancelled":
            raise HTTPException(409, f"job {job_id} is cancelled")
        opts = worker.job_options(job)
        if not 1 <= page <= documents.count_pages(opts.inputs[0], opts.password):
            raise UsageError(f"page {page} is out of range", f"use 1..{job.pages_total}")
        import io

        it = documents.iter_pages(
            opts.inputs[0], pages=str(page), dpi=opts.dpi, password=opts.password, max_pixels=opts.max_pixels
        )
        try:
            img = next(iter(it)).image
        finally:
            it.close()
        buf = io.BytesIO()
        img.save(buf, "PNG")
        return Response(buf.getvalue(), media_type="image/png")

    @app.delete("/v1/jobs/{job_id}", responses=errors(401, 404), dependencies=[Depends(authorize)])
    def delete_job(job_id: str) -> dict:
        """Cancel a queued/running job, or delete a finished one with its files."""
        get_job(job_id)
        before = store.cancel(job_id)
        if before in ("queued", "running"):
            worker.cancel(job_id)
            if before == "queued":
                import shutil

                shutil.rmtree(store.job_dir(job_id), ignore_errors=True)
            return {"id": job_id, "status": "cancelled"}
        store.delete(job_id)
        return {"id": job_id, "status": "deleted"}

    @app.get("/health")
    def health() -> dict:
        """Alive (the process answers)."""
        return {"status": "ok"}

    @app.get("/ready", responses={503: {"model": ErrorBody}})
    def ready() -> JSONResponse:
        """Models loaded and, for ``--recognizer openai``, every configured server answering ``/health``."""
        if worker.error:
            return JSONResponse(
                {"error": worker.error, "fix": "fix the engine setup and restart"}, status_code=503
            )
        if not worker.ready.is_set():
            return JSONResponse(
                {"error": "models are loading", "fix": "retry in a few seconds"}, status_code=503
            )
        if config.base.recognizer == "openai":
            for url in config.base.server_urls:
                try:
                    httpx.get(f"{url.rstrip('/')}/health", timeout=2.0, trust_env=False).raise_for_status()
                except httpx.HTTPError as exc:
                    return JSONResponse(
                        {
                            "error": f"recognizer server {url} is not ready ({type(exc).__name__})",
                            "fix": f"start it or check curl {url}/health",
                        },
                        status_code=503,
                    )
        return JSONResponse({"status": "ready"})

    @app.get("/metrics", response_class=PlainTextResponse)
    def prometheus() -> Response:
        """Prometheus text format."""
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _count(path: Path, opts: ParseOptions, filename: str) -> int:
    """Pages the job will parse (page range and ``--limit`` applied), like ``pipeline._selected``.

    Raises:
        InputError / UsageError: unreadable document or bad page range, the path replaced by ``filename``.
    """
    try:
        n = documents.count_pages(path, opts.password)
        selected = documents.parse_page_range(opts.pages, n)
    except (InputError, UsageError, ConfigError) as exc:
        raise type(exc)(exc.message.replace(str(path), filename), exc.remedy) from None
    return len(selected[: opts.limit] if opts.limit is not None else selected)


def _cache_pages(out_dir: Path) -> int:
    """Finished pages of a running job: files in its page cache (includes pages of an earlier boot)."""
    cache = out_dir / ".ocrstack-cache"
    return sum(1 for _ in cache.glob("*/p*.json")) if cache.is_dir() else 0
