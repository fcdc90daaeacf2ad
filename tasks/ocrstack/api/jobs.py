"""The job routes under ``/v1``: submit (queued or synchronous), status, result, page image, delete.

Each route takes the :class:`~ocrstack.api.service.Service` through the ``service`` dependency and
needs the API key (:func:`~ocrstack.api.service.authorize`). Errors are
:class:`~ocrstack.core.errors.OcrstackError` subclasses, answered as 4xx JSON by
:mod:`ocrstack.api.schemas`.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import time
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.exceptions import HTTPException

from ocrstack.api import listing, pageimages, results, webhooks
from ocrstack.api import options as api_options
from ocrstack.api.config import request_bounds
from ocrstack.api.jobquery import DEFAULT_LIMIT, MAX_LIMIT
from ocrstack.api.schemas import UPLOAD_BODY, Deleted, JobBody, JobList, ParseBody, errors
from ocrstack.api.service import Service, ServiceDep, authorize
from ocrstack.api.store import STATES, TERMINAL, Job, QueueFull
from ocrstack.api.uploads import receive, safe_name
from ocrstack.core.errors import ConfigError, InputError, UsageError
from ocrstack.parsing import documents
from ocrstack.parsing.options import ParseOptions

#: Document kinds a job accepts (sniffed from the bytes, never the file name).
KINDS = ("pdf", "png", "jpeg", "tiff", "webp", "bmp")

STATUS_HELP = f"only jobs in these states (repeat or comma-separate): {', '.join(STATES)}"

router = APIRouter(dependencies=[Depends(authorize)])


def job_json(svc: Service, job: Job) -> dict:
    """The :class:`~ocrstack.api.schemas.JobBody` of ``job`` (pages done counted while running)."""
    data = {k: getattr(job, k) for k in JobBody.model_fields if hasattr(job, k)}
    data["status"] = job.state
    if job.webhook is None and job.webhook_state:  # owed, not yet recorded (callbackrows)
        data["webhook"] = {"state": job.webhook_state, "claims": job.webhook_claims}
    if job.state == "running":
        data["pages_done"] = _cache_pages(svc.store.out_dir(job.id))
    data["status_url"] = f"/v1/jobs/{job.id}"
    data["result_url"] = f"/v1/jobs/{job.id}/result"
    return data


def get_job(svc: Service, job_id: str) -> Job:
    """The job ``job_id``.

    Raises:
        HTTPException: 404 when there is none (never created, deleted or expired).
    """
    job = svc.store.get(job_id)
    if job is None:
        raise HTTPException(404, f"no job {job_id!r} (it may have expired)")
    return job


def _check_upload(filename: str | None, size: int, kind: str) -> None:
    """Refuse an empty upload or one that is no PDF or supported image.

    Raises:
        InputError: empty file, or bytes of another kind.
    """
    if size == 0:
        raise InputError(
            f"{filename or 'upload'}: file is empty (0 bytes)", "re-export or re-download the document"
        )
    if kind not in KINDS:
        raise InputError(
            f"{filename or 'upload'}: not a PDF or a supported image (checked the bytes)",
            "send a PDF, PNG, JPEG, TIFF, WebP or BMP file",
        )


async def submit(svc: Service, request: Request, sync: bool) -> dict:
    """Receive one upload with its form fields, check it and queue its job; its JobBody.

    Raises:
        QueueFull: the queue is full (checked before the body is read).
        OcrstackError: a refused upload, option or page count (4xx).
    """
    config, store = svc.config, svc.store
    counts = await asyncio.to_thread(store.counts)  # the database off the event loop
    if sum(counts[s] for s in ("queued", "running")) >= config.max_queue:
        raise QueueFull  # before reading the body: a client sending 100 MB learns at once
    tmp = store.upload_tmp()
    up = await receive(request, tmp, int(config.max_upload_mb * 1024 * 1024))
    try:
        kind = documents.sniff(tmp) if up.size else ""
        _check_upload(up.filename, up.size, kind)
        fields = dict(up.fields)
        callback = fields.pop(webhooks.FIELD, [""])[-1] or None
        if callback is not None:
            webhooks.check_url(callback, config.webhook_hosts)
        opts = api_options.from_form(
            {k: (v if k == "server_urls" else v[-1]) for k, v in fields.items()},
            base=config.base,
            allowed_server_urls=config.base.server_urls,
            bounds=request_bounds(config),
        )
        name = safe_name(up.filename, kind)
        pages = await asyncio.to_thread(_count, tmp, opts, up.filename or name)
        limit = config.sync_max_pages if sync else config.max_pages
        if pages > limit:
            fix = "use POST /v1/jobs for long documents" if sync else "split the document or select --pages"
            raise InputError(f"{up.filename or name}: {pages} pages selected, the limit is {limit}", fix)
        job = await asyncio.to_thread(
            functools.partial(
                store.create,
                upload=tmp,
                name=name,
                filename=up.filename or name,
                options={**api_options.to_json(opts), **svc.worker.secrets.keep(opts)},
                pages_total=pages,
                callback=callback,
            )
        )
    finally:
        tmp.unlink(missing_ok=True)
    svc.worker.wake()
    return job_json(svc, job)


@router.post(
    "/v1/jobs",
    status_code=202,
    response_model=JobBody,
    openapi_extra=UPLOAD_BODY,
    responses=errors(400, 401, 413, 422, 429),
)
async def create_job(request: Request, svc: ServiceDep) -> JSONResponse:
    """Queue a document; poll ``status_url``, then fetch ``result_url``."""
    body = await submit(svc, request, sync=False)
    return JSONResponse(body, status_code=202, headers={"Location": body["status_url"]})


@router.post(
    "/v1/parse",
    response_model=ParseBody,
    openapi_extra=UPLOAD_BODY,
    responses={**errors(400, 401, 409, 413, 422, 429), 202: {"model": JobBody}},
)
async def parse_sync(request: Request, svc: ServiceDep) -> JSONResponse:
    """Parse a small document and answer when done (202 with the job when over ``sync_timeout``)."""
    body = await submit(svc, request, sync=True)
    deadline = time.monotonic() + svc.config.sync_timeout
    while time.monotonic() < deadline:
        job = await asyncio.to_thread(svc.store.get, body["id"])
        if job is None or job.state in TERMINAL:
            break
        await asyncio.sleep(0.05)
    else:
        return JSONResponse(
            await asyncio.to_thread(lambda: job_json(svc, get_job(svc, body["id"]))),
            status_code=202,
            headers={"Location": body["status_url"]},
        )
    if job is None or job.state in ("failed", "cancelled"):
        return JSONResponse(
            {
                "error": (job.error if job else None) or "the job was cancelled",
                "fix": (job.fix if job else None) or "submit it again",
            },
            status_code=409,
        )
    loaded = results.load(svc.store.out_dir(job.id))
    if loaded is None:
        return JSONResponse({"error": "no output was written", "fix": "submit it again"}, status_code=409)
    return JSONResponse({**results.seed_shape(job.state, *loaded), "job_id": job.id})


@router.get("/v1/jobs", response_model=JobList, responses=errors(400, 401, 422))
async def list_jobs(
    svc: ServiceDep,
    status: Annotated[list[str] | None, Query(description=STATUS_HELP)] = None,
    since: Annotated[
        float | None, Query(ge=0, allow_inf_nan=False, description="only jobs created at or after (unix s)")
    ] = None,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="jobs per page")] = DEFAULT_LIMIT,
) -> dict:
    """Jobs of every client of this service (all replicas), newest first, a page at a time."""
    q = listing.query(status, since, cursor, limit)

    def read() -> dict:
        jobs, next_cursor = listing.page(svc.store.jobs(q), q)
        return {"jobs": [job_json(svc, j) for j in jobs], "next_cursor": next_cursor}

    return await asyncio.to_thread(read)


@router.get("/v1/jobs/{job_id}", response_model=JobBody, responses=errors(401, 404))
async def job_status(job_id: str, svc: ServiceDep) -> dict:
    """State, pages done/total and position in the queue (0 = next)."""
    # one hop to a thread for the database and the page-cache count; the dependencies and the
    # response model run on the event loop (a plain def route costs three more hops under load)
    return await asyncio.to_thread(lambda: job_json(svc, get_job(svc, job_id)))


@router.get(
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
)
def job_result(
    job_id: str,
    request: Request,
    svc: ServiceDep,
    format: str | None = None,
) -> Response:
    """NAME.md (``format=markdown``), NAME.blocks.json (``json``) or a zip with figures (``zip``);
    without ``format`` the ``Accept`` header decides (default Markdown)."""
    job = get_job(svc, job_id)
    fmt = results.pick_format(format, request.headers.get("accept"))
    if fmt is None:
        raise UsageError(f"format {format!r} is unknown", f"use one of: {', '.join(results.FORMATS)}")
    out = svc.store.out_dir(job_id)
    files = results.output_files(out) if job.state in ("done", "partial") else None
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
    target = results.build_zip(out, svc.store.job_dir(job_id) / "result.zip")
    return FileResponse(target, media_type="application/zip", filename=f"{md.stem}.zip")


@router.get(
    "/v1/jobs/{job_id}/pages/{page}/image",
    responses={
        200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}},
        **errors(400, 401, 404, 409, 422),
    },
)
def page_image(job_id: str, page: int, svc: ServiceDep) -> Response:
    """1-based ``page`` rendered as PNG at the job's DPI: the pixels the layout boxes refer to
    (rendered once per job and page, then sent from disk: :mod:`ocrstack.api.pageimages`)."""
    job = get_job(svc, job_id)
    if job.state == "cancelled":
        raise HTTPException(409, f"job {job_id} is cancelled")
    opts = svc.worker.secrets.restore(job.options, svc.worker.job_options(job))
    if not 1 <= page <= documents.count_pages(opts.inputs[0], opts.password):
        raise UsageError(f"page {page} is out of range", f"use 1..{job.pages_total}")
    return FileResponse(pageimages.png(svc.store.job_dir(job_id), opts, page), media_type="image/png")


@router.delete("/v1/jobs/{job_id}", response_model=Deleted, responses=errors(401, 404))
def delete_job(job_id: str, svc: ServiceDep) -> dict:
    """Cancel a queued/running job, or delete a finished one with its files."""
    job = get_job(svc, job_id)
    svc.worker.secrets.drop(job.options)
    if job.state == "queued":  # its files first: space on a full data dir
        shutil.rmtree(svc.store.job_dir(job_id), ignore_errors=True)
    before = svc.store.cancel(job_id)
    if before in ("queued", "running"):
        svc.worker.cancel(job_id)
        return {"id": job_id, "status": "cancelled"}
    svc.store.delete(job_id)
    return {"id": job_id, "status": "deleted"}


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
