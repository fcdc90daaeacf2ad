"""Job callbacks (issue 23 item 4): a job may name ``callback_url``; when it ends the service POSTs
its summary there, signed, retried with backoff, and records the delivery in the job.

The contract (README "Webhooks"):

* body: JSON ``{"id", "status", "filename", "pages_total", "pages_done", "pages_cached", "error",
  "fix", "finished", "result_url"}`` for a job that ended ``done``, ``partial`` or ``failed``;
* headers: ``X-Ocrstack-Timestamp: <unix seconds>`` and
  ``X-Ocrstack-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>." + body, key = the service's
  webhook secret>``; a receiver recomputes it (:func:`verify`) and rejects timestamps older than a
  few minutes (replay);
* delivery: up to :data:`ATTEMPTS` POSTs, waiting ``backoff * 2**n`` seconds between them, retried
  on a connection error, 408, 429 or 5xx; any 2xx is delivered; redirects are not followed;
* at least once: the callback is owed in the job store from the moment the job ends and sent by
  any replica (:mod:`ocrstack.api.callbackrows`, :mod:`ocrstack.api.outbox`), so a receiver may
  see one job's body twice (a replica died after the POST, before recording it): dedupe on ``id``;
* allowed hosts: only hosts the operator lists (``--webhook-host``); none by default, so the service
  makes no request to a host a client chose.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from ocrstack.core.errors import UsageError

#: The form field naming a job's callback (besides the parse options).
FIELD = "callback_url"
ATTEMPTS = 5
#: Seconds a signature stays valid for :func:`verify` (replay window).
TOLERANCE = 300.0
RETRY_STATUS = {408, 429}
#: Seconds between looks at :func:`deliver`'s ``abandon`` during a POST or a wait.
CHECK = 0.1


class _Abandoned(Exception):
    """:func:`deliver`'s ``abandon`` said stop before the POST in flight answered."""


def check_url(url: str, allowed_hosts: Sequence[str]) -> str:
    """The callback URL when its scheme is http(s) and its host (or host:port) is allowed (an
    IPv6 host listed as ``[::1]:PORT``, ``[::1]`` or ``::1``).

    Raises:
        UsageError: another scheme, a URL that cannot be sent (bad port, control characters), or
            a host the operator did not allow (none are by default).
    """
    parts = urlsplit(url)
    try:
        port = parts.port  # ValueError: not a number, or out of range
        httpx.URL(url)  # InvalidURL: one the sender could not send (control characters)
        sendable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except (ValueError, httpx.InvalidURL):
        sendable = False
    if not sendable:
        raise UsageError("callback_url must be an http:// or https:// URL", "send e.g. https://host/hook")
    host = parts.hostname.lower()
    named = f"[{host}]" if ":" in host else host  # IPv6 as URLs write it; listed as ::1 too
    hostport = f"{named}:{port}" if port else named
    allowed = {h.lower() for h in allowed_hosts}
    if not {host, named, hostport} & allowed:
        raise UsageError(
            f"callback host {hostport} is not allowed by this service",
            "ask the operator to add it with --webhook-host"
            if allowed
            else "this service sends no callbacks (no --webhook-host); poll status_url",
        )
    return url


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 with key ``secret`` over ``timestamp + "." + body``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def verify(secret: str | bytes, headers: Any, body: bytes, now: float | None = None) -> bool:
    """What a receiver checks: the signature matches and the timestamp is within :data:`TOLERANCE`.

    Args:
        secret: the service's ``--webhook-secret`` (str, or its UTF-8 bytes).
        headers: the request's headers, any mapping (names in any case: HTTP header names are
            case-insensitive, RFC 9110 5.1) or an ASGI scope's list of ``(name, value)`` byte pairs.
        body: the raw request body, as received (not re-serialised).
        now: unix seconds to check the timestamp against (default: now).
    """
    items = headers.items() if hasattr(headers, "items") else headers
    found = {_text(k).lower(): _text(v) for k, v in items}
    ts = found.get("x-ocrstack-timestamp", "")
    given = found.get("x-ocrstack-signature", "")
    if isinstance(secret, bytes):
        secret = secret.decode()
    try:
        age = (time.time() if now is None else now) - int(ts)
    except ValueError:
        return False
    return abs(age) <= TOLERANCE and hmac.compare_digest(given, signature(secret, ts, body))


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def payload(job: Any) -> dict:
    """The body sent for an ended :class:`ocrstack.api.store.Job`."""
    keys = ("id", "filename", "pages_total", "pages_done", "pages_cached", "error", "fix", "finished")
    return {
        **{k: getattr(job, k) for k in keys},
        "status": job.state,
        "result_url": f"/v1/jobs/{job.id}/result",
    }


def deliver(
    url: str,
    body: dict,
    secret: str,
    *,
    attempts: int = ATTEMPTS,
    backoff: float = 0.5,
    timeout: float = 10.0,
    keep: Callable[[float], bool] | None = None,
    abandon: Callable[[], bool] | None = None,
) -> dict | None:
    """POST ``body`` to ``url`` signed with ``secret``; retry as the module docstring says.

    Args:
        timeout: seconds one POST may take in all (connect, send, answer; cut off after it, and
            recorded as ``Timeout``).
        keep: called with the seconds the next wait and attempt may take, before each retry; False
            stops the delivery (the outbox's hold on it was taken over by another sender).
        abandon: asked before each POST and every :data:`CHECK` s during a POST or a wait; True
            stops the delivery at once (the outbox is stopping), unless the POST has answered.

    Returns:
        The delivery record kept in the job: ``{"state": "delivered"|"failed", "attempts": n,
        "status": last HTTP status or None, "error": why it failed or None, "at": unix seconds}``;
        None when ``keep`` or ``abandon`` stopped it. A URL httpx cannot send is recorded
        ``failed`` at once.

    Blocking, on an event loop of its own (call it from a thread, as the outbox's senders do).
    """
    data = json.dumps(body, sort_keys=True).encode()
    try:
        return asyncio.run(
            _deliver(url, data, secret, attempts, backoff, timeout, keep, abandon or (lambda: False))
        )
    except _Abandoned:
        return None


async def _unless(abandon: Callable[[], bool], aw: Any) -> Any:
    """``await aw`` (a POST or a wait), looking at ``abandon`` every :data:`CHECK` s.

    Raises:
        _Abandoned: ``abandon()`` said stop before ``aw`` finished (it is cancelled); an ``aw``
            that finished meanwhile gives its result (an answer is never dropped).
    """
    task = asyncio.ensure_future(aw)
    while not (await asyncio.wait({task}, timeout=CHECK))[0]:
        if abandon():
            task.cancel()
            await asyncio.wait({task})
            if task.cancelled() or task.exception() is not None:
                raise _Abandoned
    return task.result()


async def _post(client: httpx.AsyncClient, url: str, data: bytes, secret: str, timeout: float) -> int:
    """One signed POST; its HTTP status. ``timeout`` bounds the whole exchange, not each read:
    a receiver trickling its answer must not outlast the outbox's hold on the callback.

    Raises:
        httpx.HTTPError, httpx.InvalidURL, asyncio.TimeoutError: no answer (see :func:`deliver`).
    """
    ts = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Ocrstack-Timestamp": ts,
        "X-Ocrstack-Signature": signature(secret, ts, data),
    }
    response = await asyncio.wait_for(client.post(url, content=data, headers=headers), timeout)
    return response.status_code


async def _deliver(
    url: str,
    data: bytes,
    secret: str,
    attempts: int,
    backoff: float,
    timeout: float,
    keep: Callable[[float], bool] | None,
    abandon: Callable[[], bool],
) -> dict | None:
    """:func:`deliver` on its own event loop (``asyncio.wait_for`` cuts a POST off at ``timeout``);
    raises :class:`_Abandoned` when ``abandon`` stops it."""
    status: int | None = None
    error: str | None = None
    n = 0
    async with httpx.AsyncClient(timeout=timeout, trust_env=False, follow_redirects=False) as client:
        for n in range(1, attempts + 1):
            if abandon():
                raise _Abandoned
            try:
                status = await _unless(abandon, _post(client, url, data, secret, timeout))
                error = None if 200 <= status < 300 else f"HTTP {status}"
            except asyncio.TimeoutError:
                status, error = None, "Timeout"
            except httpx.InvalidURL:  # stored before check_url refused such URLs: no retry helps
                status, error = None, "InvalidURL"
                break
            except httpx.HTTPError as exc:
                status, error = None, type(exc).__name__
            if error is None:
                return {
                    "state": "delivered",
                    "attempts": n,
                    "status": status,
                    "error": None,
                    "at": time.time(),
                }
            if status is not None and status < 500 and status not in RETRY_STATUS:
                break  # the receiver refused it: retrying would not help
            if n < attempts:
                wait = backoff * 2 ** (n - 1)
                if keep is not None and not keep(wait + timeout):
                    return None
                await _unless(abandon, asyncio.sleep(wait))
    return {"state": "failed", "attempts": n, "status": status, "error": error, "at": time.time()}
