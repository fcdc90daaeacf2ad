"""The routes without an API key: liveness, readiness, Prometheus metrics and the web page."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ocrstack.api import storage
from ocrstack.api.schemas import ErrorBody
from ocrstack.api.service import Service, ServiceDep
from ocrstack.client.http import base_url, curl_hint, public_url
from ocrstack.client.routing import split_capacity

#: The web page and its assets (served at ``/`` and ``/static``).
STATIC = Path(__file__).parent / "static"

router = APIRouter()


@router.get("/health")
def health() -> dict:
    """Alive (the process answers)."""
    return {"status": "ok"}


def _servers_down(svc: Service) -> JSONResponse | None:
    """A 503 answer naming the first configured recognizer server not answering ``/health`` (200,
    or 404: no such route, as :func:`ocrstack.client.probe.probe` takes it). The URL is the one
    requests go to (``/v1`` and ``#capacity`` off) and is shown without credentials (issue 25 item 7)."""
    for url in svc.config.base.server_urls:
        base = base_url(split_capacity(url)[0])
        try:
            status = httpx.get(f"{base}/health", timeout=2.0, trust_env=False).status_code
            problem = None if status in (200, 404) else f"/health answered HTTP {status}"
        except httpx.HTTPError as exc:
            problem = type(exc).__name__
        if problem is not None:
            return JSONResponse(
                {
                    "error": f"recognizer server {public_url(base)} is not ready ({problem})",
                    "fix": f"start it or check: {curl_hint(base)}",
                },
                status_code=503,
            )
    return None


@router.get("/ready", responses={503: {"model": ErrorBody}})
def ready(svc: ServiceDep) -> JSONResponse:
    """Models loaded and, for ``--recognizer openai``, every configured server answering ``/health``."""
    if svc.worker.stopped:  # a worker thread ended (a damaged job database, a bug): jobs would wait
        return JSONResponse(
            {
                "error": next(iter(svc.worker.stopped.values())),
                "fix": "see the service log; check the job database (--data-dir) and restart the service",
            },
            status_code=503,
        )
    unwritable = storage.unwritable(svc.store.data_dir)
    if unwritable is not None:  # jobs would fail (issue 25 item 3)
        return JSONResponse(
            {"error": unwritable, "fix": "free space in the service's --data-dir (jobs go on when it is)"},
            status_code=503,
        )
    if svc.worker.error:
        return JSONResponse(
            {"error": svc.worker.error, "fix": "fix the engine setup and restart"}, status_code=503
        )
    if not svc.worker.ready.is_set():
        return JSONResponse({"error": "models are loading", "fix": "retry in a few seconds"}, status_code=503)
    down = _servers_down(svc) if svc.config.base.recognizer == "openai" else None
    return down or JSONResponse({"status": "ready"})


@router.get("/metrics", response_class=PlainTextResponse)
def prometheus(svc: ServiceDep) -> Response:
    """Prometheus text format."""
    return Response(generate_latest(svc.metrics.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page() -> FileResponse:
    """The web page (upload a document, watch its job, view the result)."""
    return FileResponse(STATIC / "index.html", media_type="text/html")
