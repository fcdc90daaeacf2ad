"""Which sites may talk to the service: a Host allow-list and an Origin check (issue 25 item 5).

The default service listens on loopback without a key, so any web page the operator opens could
reach it: another loopback origin POSTed jobs with ``fetch(..., {mode: "no-cors"})``, and a DNS
rebinding page reaches it under its own host name. :class:`OriginGuard` (a plain ASGI middleware)
therefore

* answers 400 to a request whose ``Host`` is none of the service's names (the ``--host`` it binds,
  ``localhost``, ``127.0.0.1``, ``::1``, each ``--allowed-host``); a wildcard bind (``0.0.0.0``,
  ``::``) without ``--allowed-host`` checks no Host (it needs ``--api-key``, which a foreign page
  does not have);
* answers 403 to a state-changing request (POST, PUT, PATCH, DELETE) that a browser marks as coming
  from another site: an ``Origin`` other than the service's own (``scheme://Host``) or a
  ``--cors-origin``, or, without ``Origin``, ``Sec-Fetch-Site: cross-site``/``same-site``.

API clients send neither header (curl, httpx, ``ocrstack parse --api``) and keep working; the web
page served at ``/`` sends its own origin.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD = ("0.0.0.0", "::", "")
UNSAFE = ("POST", "PUT", "PATCH", "DELETE")

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]


def host_name(host: str) -> str:
    """The name part of a ``Host`` header: ``[::1]:8800`` -> ``::1``, ``Localhost:80`` -> ``localhost``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_hosts(bind: str, extra: Iterable[str]) -> frozenset[str] | None:
    """Host names the service answers to, or None (no Host check: a wildcard bind, nothing extra)."""
    extra = [host_name(h) for h in extra]
    if bind in WILDCARD and not extra:
        return None
    return frozenset({host_name(bind), *LOCAL_NAMES, *extra})


class OriginGuard:
    """ASGI middleware: the Host allow-list and the cross-site check described in the module doc.

    Args:
        app: the wrapped ASGI app.
        hosts: allowed Host names (:func:`allowed_hosts`); None: any.
        origins: ``--cors-origin`` values a state-changing request may come from.
    """

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None, origins: Iterable[str]) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = {o.rstrip("/").lower() for o in origins}

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        problem = self.check(scope["method"], scope.get("scheme", "http"), headers)
        if problem is None:
            return await self.app(scope, receive, send)
        status, error, fix = problem
        body = json.dumps({"error": error, "fix": fix}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def check(self, method: str, scheme: str, headers: dict[str, str]) -> tuple[int, str, str] | None:
        """``(status, error, fix)`` refusing the request, or None to let it through."""
        host = headers.get("host", "")
        if self.hosts is not None and host_name(host) not in self.hosts:
            return (
                400,
                f"Host {host!r} is not a name of this service",
                f"use one of: {', '.join(sorted(self.hosts))}, "
                "or restart the service with ocrstack api serve --allowed-host NAME",
            )
        if method.upper() not in UNSAFE:
            return None
        origin = headers.get("origin", "").rstrip("/").lower()
        site = headers.get("sec-fetch-site", "").lower()
        if origin:
            if origin == f"{scheme}://{host}".lower() or origin in self.origins:
                return None
        elif site not in ("cross-site", "same-site"):
            return None  # no Origin and no cross-site mark: an API client, or the same origin
        return (
            403,
            f"{method.upper()} from another site ({origin or 'Sec-Fetch-Site: ' + site}) refused",
            "open the web page from this service's own address, call the API without a browser, or "
            "restart the service with ocrstack api serve --cors-origin ORIGIN",
        )
