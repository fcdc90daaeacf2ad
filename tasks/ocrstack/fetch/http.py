"""Resumable HTTP download with bounded retries (httpx).

* Resume: bytes already in ``DEST.part`` are kept and requested with
  ``Range: bytes=N-``; a ``206`` appends, a ``200`` (server ignores Range) restarts
  from zero, a ``416`` with ``Content-Range: bytes */N`` equal to the part size means
  the part is already complete.
* Retries: timeouts, resets, truncated bodies and 5xx are retried with exponential
  backoff; a 4xx is never retried (guide 8) and raises at once. A refused connection
  (nothing listening at that host and port) gets :data:`REFUSED_ATTEMPTS` attempts
  :data:`REFUSED_WAIT` seconds apart, not the full backoff: waiting ~30 s for a port
  nobody listens on helps nobody.
* The finished file is moved into place with ``os.replace``; a size announced by the
  server (Content-Length / Content-Range) must match.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from ocrstack.core.errors import ServerRejected, ServerUnreachable, StepFailed

#: Attempts in all when the connection is refused (ECONNREFUSED), and the wait between them (s).
REFUSED_ATTEMPTS = 2
REFUSED_WAIT = 0.5


class _Retryable(Exception):
    """A transient failure (network, 5xx, short body); ``refused``: the connection was refused."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


def _is_refused(exc: BaseException) -> bool:
    """True when ``exc`` or an exception it wraps is a ``ConnectionRefusedError``."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _total_from(resp: httpx.Response, offset: int) -> int | None:
    cr = resp.headers.get("content-range", "")
    m = re.match(r"bytes (?:\d+-\d+|\*)/(\d+)", cr)
    if m:
        return int(m.group(1))
    cl = resp.headers.get("content-length")
    if cl is not None and cl.isdigit():
        return int(cl) + (offset if resp.status_code == 206 else 0)
    return None


def _attempt(
    client: httpx.Client, url: str, part: Path, progress: Callable[[int, int | None], None] | None
) -> None:
    offset = part.stat().st_size if part.exists() else 0
    # identity encoding: byte offsets of Range must be offsets in the file itself
    headers = {"Accept-Encoding": "identity", **({"Range": f"bytes={offset}-"} if offset else {})}
    try:
        with client.stream("GET", url, headers=headers) as resp:
            if resp.status_code == 416 and offset:
                total = _total_from(resp, offset)
                if total == offset:
                    return
                part.unlink()  # the part is bigger than the file: start over
                raise _Retryable(f"416 with a {offset}-byte partial file; restarting")
            if 400 <= resp.status_code < 500:
                raise ServerRejected(
                    f"GET {url} answered {resp.status_code} {resp.reason_phrase}",
                    "check the URL (or the mirror) -- a 4xx is not retried",
                    status=resp.status_code,
                )
            if resp.status_code >= 500:
                raise _Retryable(f"server error {resp.status_code}")
            if resp.status_code == 200 and offset:
                offset = 0  # Range ignored: the body is the whole file
            elif resp.status_code not in (200, 206):
                raise _Retryable(f"unexpected status {resp.status_code}")
            total = _total_from(resp, offset)
            mode = "ab" if offset else "wb"
            with part.open(mode) as fh:
                written = offset
                for chunk in resp.iter_raw():  # as received, so an interrupted body keeps its bytes
                    fh.write(chunk)
                    written += len(chunk)
                    if progress:
                        progress(written, total)
            if total is not None and written != total:
                raise _Retryable(f"body ended at {written} of {total} bytes")
    except (httpx.TransportError, httpx.DecodingError) as exc:
        raise _Retryable(f"{type(exc).__name__}: {exc}", refused=_is_refused(exc)) from exc


def download(
    url: str,
    dest: Path,
    *,
    retries: int = 5,
    backoff: float = 1.0,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
    client: httpx.Client | None = None,
) -> Path:
    """Download ``url`` to ``dest`` (resuming ``dest.part``); returns ``dest``.

    Args:
        retries: extra attempts after the first for transient failures.
        backoff: first wait in seconds, doubled each retry.
    Raises:
        ServerRejected: the server answered 4xx (never retried).
        ServerUnreachable: the connection was refused :data:`REFUSED_ATTEMPTS` times.
        StepFailed: still failing after all retries (the ``.part`` file is kept for the next run).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    own = client is None
    client = client or httpx.Client(follow_redirects=True, timeout=timeout, trust_env=True)
    last = ""
    refused = 0
    attempts = 0
    try:
        for attempt in range(retries + 1):
            attempts += 1
            try:
                _attempt(client, url, part, progress)
                os.replace(part, dest)
                return dest
            except _Retryable as exc:
                last = str(exc)
                refused = refused + 1 if exc.refused else 0
                if refused >= REFUSED_ATTEMPTS:
                    break
                if attempt < retries:
                    time.sleep(min(backoff, REFUSED_WAIT) if exc.refused else backoff * (2**attempt))
    finally:
        if own:
            client.close()
    kept = part.stat().st_size if part.exists() else 0
    resume = f"; rerun the same command to resume from {part} ({kept} bytes kept)" if kept else ""
    if refused:
        host = httpx.URL(url).host
        port = httpx.URL(url).port or (443 if httpx.URL(url).scheme == "https" else 80)
        raise ServerUnreachable(
            f"download of {url} failed: connection refused by {host}:{port} "
            f"({attempts} attempt{'s' if attempts > 1 else ''}): nothing is listening there",
            f"check the URL, mirror or proxy (is the server running?){resume}",
        )
    raise StepFailed(
        f"download of {url} failed after {attempts} attempts: {last}",
        f"rerun the same command to resume from {part} ({kept} bytes kept)"
        if kept
        else "check the network or mirror, then rerun the same command",
    )
