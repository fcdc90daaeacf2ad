"""Request/response schemas (OpenAPI) and the error handlers: every error is JSON ``{"error", "fix"}``.

:data:`STATUS` maps :class:`ocrstack.core.errors.OcrstackError` subclasses to 4xx codes, so bad
input never gets a 5xx and the message is the CLI's one line.
"""

from __future__ import annotations

import re
import sqlite3

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from ocrstack.api import options as api_options
from ocrstack.api import storage, webhooks
from ocrstack.api.store import QueueFull, StoreUnavailable
from ocrstack.api.uploads import TooLarge
from ocrstack.core import options as core_options
from ocrstack.core.errors import DiskFull, InputError, OcrstackError, UsageError
from ocrstack.parsing.options import ParseOptions

#: CLI flag -> form field of the same request-settable option (one declaration:
#: ocrstack.parsing.options); flags of service-only options stay flags (the operator sets them).
FORM_FIELDS = {
    flag: f.name
    for f, s in core_options.specs(ParseOptions, core_options.REQUEST)
    for flag in s.flags
    if flag.startswith("--")
}
_FLAG = re.compile(r"--[a-z][a-z0-9-]*")
#: Text that ends inside an ``ocrstack api serve ...`` command (no clause break since): its flags
#: are the operator's, not form fields.
_SERVICE_COMMAND = re.compile(r"api serve[^,;()]*$")
#: The request header that carries the API key (``Authorization: Bearer KEY`` works too).
KEY_HEADER = "X-API-Key"
#: The fix of a 401 answer (the key itself is never echoed or logged).
KEY_FIX = (
    f"send the key the service was started with (ocrstack api serve --api-key, or $OCRSTACK_API_KEY) "
    f"in header {KEY_HEADER}: KEY or Authorization: Bearer KEY; in the web page, the API key field"
)


def api_wording(text: str | None) -> str | None:
    """The CLI's message or fix in the API's words: ``--text-layer`` -> ``form field text_layer``
    (flags of other verbs, and those of an ``ocrstack api serve`` command line the text names,
    are left as they are: "ocrstack api serve --server-url URL" stays a command)."""
    if text is None:
        return None

    def word(m: re.Match[str]) -> str:
        flag = m.group(0)
        if flag not in FORM_FIELDS or _SERVICE_COMMAND.search(text[: m.start()]):
            return flag  # not a request option, or a flag of the `ocrstack api serve` command named here
        return f"form field {FORM_FIELDS[flag]}"

    return _FLAG.sub(word, text)


#: OcrstackError subclass -> HTTP status (first match wins; the rest -> 400).
STATUS: tuple[tuple[type[OcrstackError], int], ...] = (
    (DiskFull, 507),  # the server's data dir is full: not the client's fault
    (TooLarge, 413),
    (InputError, 422),
    (UsageError, 400),
    (StoreUnavailable, 503),  # the job database is down (PostgreSQL store): retry
)


class ErrorBody(BaseModel):
    error: str
    fix: str | None = None


class JobBody(BaseModel):
    id: str
    status: str
    filename: str
    pages_total: int
    pages_done: int
    pages_cached: int
    position: int | None = None
    error: str | None = None
    fix: str | None = None
    created: float
    started: float | None = None
    finished: float | None = None
    expires: float | None = None
    #: The job's callback: ``{"state": "pending"|"sending", "claims"}`` while owed, then its
    #: delivery record (:func:`ocrstack.api.webhooks.deliver`, :mod:`ocrstack.api.outbox`).
    webhook: dict | None = None
    status_url: str
    result_url: str


class JobList(BaseModel):
    """One page of ``GET /v1/jobs``: newest first; pass ``next_cursor`` as ``cursor`` for the next."""

    jobs: list[JobBody]
    next_cursor: str | None = None


class LayoutBlock(BaseModel):
    """One block of ``POST /v1/parse``'s ``layout``: its category, ``bbox`` (x0, y0, x1, y1) in
    page pixels at the job's DPI, 1-based ``page`` and reading ``order``."""

    type: str
    bbox: list[float]
    page: int
    order: int


class Deleted(BaseModel):
    """``DELETE /v1/jobs/{job_id}``: ``status`` is ``cancelled`` (it was queued or running) or ``deleted``."""

    id: str
    status: str


class ParseBody(BaseModel):
    status: str
    text: str
    layout: list[LayoutBlock]
    markdown: str
    blocks: dict
    job_id: str


def errors(*codes: int) -> dict:
    return {c: {"model": ErrorBody} for c in codes}


UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        **{
                            name: {"type": "array", "items": {"type": "string"}}
                            if spec.many
                            else {"type": "string"}
                            for name, spec in api_options.FIELDS.items()
                        },
                        webhooks.FIELD: {"type": "string", "description": "POSTed to when the job ends"},
                    },
                }
            }
        },
    }
}


def install_handlers(app: FastAPI, max_queue: int, retry_after: int) -> None:
    """Register the JSON error handlers on ``app`` (429 answers carry ``Retry-After: retry_after``)."""

    @app.exception_handler(OcrstackError)
    async def ocrstack_error(request: Request, exc: OcrstackError) -> JSONResponse:
        status = next((code for cls, code in STATUS if isinstance(exc, cls)), 400)
        message = api_wording(" ".join(exc.message.split()))
        return JSONResponse({"error": message, "fix": api_wording(exc.remedy)}, status_code=status)

    async def storage_error(request: Request, exc: Exception) -> JSONResponse:
        if not storage.is_full(exc):
            raise exc  # a bug: the server's 500, as before
        full = storage.refusal("answering this request")
        return JSONResponse({"error": full.message, "fix": full.remedy}, status_code=507)

    app.add_exception_handler(OSError, storage_error)
    app.add_exception_handler(sqlite3.OperationalError, storage_error)

    @app.exception_handler(QueueFull)
    async def queue_full(request: Request, exc: QueueFull) -> JSONResponse:
        return JSONResponse(
            {
                "error": f"the job queue is full ({max_queue} jobs queued or running)",
                "fix": f"retry after {retry_after} s",
            },
            status_code=429,
            headers={"Retry-After": str(retry_after)},
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return JSONResponse(
            {
                "error": f"{where}: {first.get('msg', 'invalid request')}",
                "fix": "see GET /docs for the request format",
            },
            status_code=422,
        )

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        fix = {401: KEY_FIX, 404: "see GET /docs for the routes", 405: "see GET /docs for the methods"}.get(
            exc.status_code
        )
        return JSONResponse(
            {"error": str(exc.detail), "fix": fix},
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )
