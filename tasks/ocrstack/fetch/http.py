"""Resumable HTTP download with bounded retries (httpx; the shared policy in :mod:`ocrstack.core.retry`).

* Resume: bytes already in ``DEST.part`` are kept and requested with
  ``Range: bytes=N-``; a ``206`` appends, a ``200`` (server ignores Range) restarts
  from zero, a ``416`` with ``Content-Range: bytes */N`` equal to the part size means
  the part is already complete.
* Retries (:class:`ocrstack.core.retry.Policy`): timeouts, resets, truncated bodies, 5xx and
  429 (honouring ``Retry-After``) are retried with exponential backoff and jitter; any other
  4xx is never retried (guide 8) and raises at once. A host that is not there (DNS failure,
  connection refused) fails at once: retrying a typo'd host or a port nobody listens on
  only delays the error (issue 10 item 9).
* The finished file is moved into place with ``os.replace``; a size announced by the
  server (Content-Length / Content-Range) must match.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import httpx

from ocrstack.core import retry
from ocrstack.core.errors import ServerRejected, ServerUnreachable, StepFailed
from ocrstack.core.retry import Transient


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
                raise Transient(f"416 with a {offset}-byte partial file; restarting")
            if retry.retryable_status(resp.status_code):
                raise retry.from_status(resp, url)
            if 400 <= resp.status_code < 500:
                raise ServerRejected(
                    f"GET {url} answered {resp.status_code} {resp.reason_phrase}",
                    "check the URL (or the mirror) -- a 4xx is not retried",
                    status=resp.status_code,
                )
            if resp.status_code == 200 and offset:
                offset = 0  # Range ignored: the body is the whole file
            elif resp.status_code not in (200, 206):
                raise Transient(f"unexpected status {resp.status_code}")
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
                raise Transient(f"body ended at {written} of {total} bytes")
    except (httpx.TransportError, httpx.DecodingError) as exc:
        raise retry.from_transport(exc, url) from exc


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
        backoff: first wait in seconds, doubled each retry (plus up to 25 % jitter, at most 60 s).
    Raises:
        ServerRejected: the server answered 4xx other than 429 (never retried).
        ServerUnreachable: DNS failure or connection refused (not retried: nobody is there).
        StepFailed: still failing after all retries (the ``.part`` file is kept for the next run).
    """
    made = [d for d in (dest.parent, *dest.parent.parents) if not d.exists()]
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    own = client is None
    client = client or httpx.Client(follow_redirects=True, timeout=timeout, trust_env=True)
    policy = retry.Policy(
        attempts=retries + 1,
        wait_initial=backoff,
        wait_max=max(backoff, 60.0),
        wait_jitter=backoff * 0.25,
        retry_unreachable=False,
    )
    attempts = 0
    try:
        for attempt in policy.context():
            with attempt:
                attempts += 1
                _attempt(client, url, part, progress)
        os.replace(part, dest)
        return dest
    except Transient as exc:
        last = exc
    except BaseException:  # a 4xx, Ctrl-C: still no empty destination folder left behind
        if not part.exists():
            _remove_empty(made)
        raise
    finally:
        if own:
            client.close()
    kept = part.stat().st_size if part.exists() else 0
    if not part.exists():
        _remove_empty(made)  # a failed first try leaves no empty destination folder behind
    resume = f"; rerun the same command to resume from {part} ({kept} bytes kept)" if kept else ""
    if last.unreachable:
        u = httpx.URL(url)
        port = u.port or (443 if u.scheme == "https" else 80)
        n = f"{attempts} attempt{'s' if attempts > 1 else ''}, not retried"
        if retry.name_unknown(last):
            what = f"host name {u.host} not resolved (DNS failure; {n})"
            fix = "check the host name in the URL, or the mirror / proxy settings"
        else:
            what = f"connection refused by {u.host}:{port} ({n}): nothing is listening there"
            fix = "check the URL, mirror or proxy (is the server running?)"
        raise ServerUnreachable(f"download of {url} failed: {what}", fix + resume) from last
    raise StepFailed(
        f"download of {url} failed after {attempts} attempts: {last}",
        f"rerun the same command to resume from {part} ({kept} bytes kept)"
        if kept
        else "check the network or mirror, then rerun the same command",
    ) from last


def _remove_empty(made: list[Path]) -> None:
    """Remove the folders this download created (deepest first) while they are empty."""
    for d in made:
        try:
            d.rmdir()
        except OSError:
            return
