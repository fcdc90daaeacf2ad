"""The service's running state, handed to every route.

The settings, :class:`ocrstack.api.config.ServiceConfig`, live in a module without FastAPI
(``ocrstack --help`` imports them; issue 24 item 2). :class:`Service` is what the routes share at
run time (config, job store, metrics, worker): it lives in ``app.state.service`` and reaches a route
through the :func:`service` dependency, so no route closes over variables of
:func:`ocrstack.api.app.create_app`. :func:`authorize` is the API-key check of every ``/v1`` route.
Both dependencies are ``async`` (no I/O): a request pays no thread hop for them.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from starlette.exceptions import HTTPException

from ocrstack.api.config import ServiceConfig
from ocrstack.api.metrics import Metrics
from ocrstack.api.schemas import KEY_HEADER
from ocrstack.api.stores import Store
from ocrstack.api.worker import Worker


@dataclass(frozen=True)
class Service:
    """What the routes share: the settings, the job store, the metrics and the worker."""

    config: ServiceConfig
    store: Store
    metrics: Metrics
    worker: Worker


async def service(request: Request) -> Service:
    """FastAPI dependency: the :class:`Service` of the app serving ``request`` (``async``: FastAPI
    runs a plain ``def`` dependency on its thread pool, a hop per request for a dict lookup)."""
    return request.app.state.service


#: A route parameter annotated so receives the :class:`Service` (``svc: ServiceDep``).
ServiceDep = Annotated[Service, Depends(service)]


async def authorize(request: Request) -> None:
    """FastAPI dependency of the ``/v1`` routes (``async`` for the reason :func:`service` is):
    :func:`check_key`."""
    check_key(request)


def check_key(request: Request) -> None:
    """The configured API key, from header ``X-API-Key`` or ``Authorization: Bearer``, compared in
    constant time (:func:`hmac.compare_digest`).

    Raises:
        HTTPException: 401 with ``WWW-Authenticate: Bearer`` when a key is configured and the
            request does not carry it.
    """
    key = request.app.state.service.config.api_key
    if not key:
        return
    given = request.headers.get("x-api-key") or ""
    auth = request.headers.get("authorization") or ""
    if not given and auth.lower().startswith("bearer "):
        given = auth[7:].strip()
    if not hmac.compare_digest(given.encode(), key.encode()):
        raise HTTPException(
            401,
            f"{'wrong' if given else 'missing'} API key (header {KEY_HEADER}, or Authorization: Bearer)",
            headers={"WWW-Authenticate": "Bearer"},
        )
