"""Resumable HTTP download with bounded retries (httpx).

* Resume: bytes already in ``DEST.part`` are kept and requested with
  ``Range: bytes=N-``; a ``206`` appends, a ``200`` (server ignores Range) restarts
  from zero, a ``416`` with ``Content-Range: bytes */N`` equal to the part size means
  the part is already complete.
* Retries: connection errors, timeouts, truncated bodies and 5xx are retried with
  exponential backoff; a 4xx is never retried (guide 8) and raises at once.
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

from ocrstack.errors import ServerRejected, StepFailed


class _Retryable(Exception):
    """A transient failure (network, 5xx, short body)."""


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
        raise _Retryable(f"{type(exc).__name__}: {exc}") from exc


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
        StepFailed: still failing after all retries (the ``.part`` file is kept for the next run).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    own = client is None
    client = client or httpx.Client(follow_redirects=True, timeout=timeout, trust_env=True)
    last = ""
    try:
        for attempt in range(retries + 1):
            try:
                _attempt(client, url, part, progress)
                os.replace(part, dest)
                return dest
            except _Retryable as exc:
                last = str(exc)
                if attempt < retries:
                    time.sleep(backoff * (2**attempt))
    finally:
        if own:
            client.close()
    raise StepFailed(
        f"download of {url} failed after {retries + 1} attempts: {last}",
        f"rerun the same command to resume from {part} "
        f"({part.stat().st_size if part.exists() else 0} bytes kept)",
    )
