"""``ocrstack parse --api URL INPUT...``: parse through a running ``ocrstack api`` service and
write the same outputs as a local parse (``NAME.md``, ``NAME.blocks.json``, ``NAME_files/``).

Each input becomes one job (``POST /v1/jobs`` with the options that differ from the defaults);
the client polls its status, downloads the zip result and extracts it into the output directory,
file by file with atomic writes. The service key comes from ``$OCRSTACK_API_KEY`` (header
``X-API-Key``); a 429 is retried after ``Retry-After``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import httpx

from ocrstack.api import options as api_options
from ocrstack.core import options as core_options
from ocrstack.core.errors import (
    ConfigError,
    InputError,
    OcrstackError,
    PartialSuccess,
    ServerRejected,
    ServerUnreachable,
    UsageError,
)
from ocrstack.parsing import documents, outputs
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import batch

API_KEY_ENV = "OCRSTACK_API_KEY"
#: Seconds between status polls, and how many 429 answers are waited out per input.
POLL = 0.5
MAX_429 = 60


def request_fields(options: ParseOptions) -> dict[str, str | list[str]]:
    """Form fields for the options that differ from :class:`ParseOptions` defaults."""
    default = ParseOptions(inputs=())
    fields: dict[str, str | list[str]] = {}
    for name, spec in api_options.FIELDS.items():
        value = getattr(options, name)
        if value == getattr(default, name) or value is None:
            continue
        fields[name] = (
            list(value) if spec.many else str(value).lower() if isinstance(value, bool) else str(value)
        )
    return fields


def _raise_for(r: httpx.Response, source: Path) -> None:
    if r.status_code < 400:
        return
    try:
        body = r.json()
        message, fix = body.get("error") or r.text, body.get("fix")
    except ValueError:
        message, fix = f"HTTP {r.status_code}: {r.text[:200]}", None
    message = f"{source}: {message}"
    if r.status_code == 401:
        raise ConfigError(message, f"set ${API_KEY_ENV} to the service's API key")
    if r.status_code in (413, 422):
        raise InputError(message, fix)
    if r.status_code < 500:
        raise UsageError(message, fix)
    raise ServerRejected(message, fix or "see the service log", status=r.status_code)


def _extract(archive: Path, out_dir: Path, name: str) -> None:
    """Extract the job's zip into ``out_dir``: only ``NAME.md``, ``NAME.blocks.json`` and
    ``NAME_files/...`` entries, no absolute paths or ``..`` (never trust an archive)."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            rel = PurePosixPath(info.filename)
            ok = (
                rel.parts
                and not rel.is_absolute()
                and ".." not in rel.parts
                and (str(rel) in (f"{name}.md", f"{name}.blocks.json") or rel.parts[0] == f"{name}_files")
            )
            if info.is_dir():
                continue
            if not ok:
                raise ServerRejected(
                    f"unexpected entry {info.filename!r} in the result", "check the service version"
                )
            outputs.atomic_write_bytes(out_dir.joinpath(*rel.parts), zf.read(info))


def _same_settings(paths: outputs.OutputPaths, options: ParseOptions) -> str | None:
    """The stored settings hash of an existing output when its option values equal ``options``'
    (the service's code and engine versions are its own, so only the options are compared), else
    None -- which :func:`ocrstack.parsing.outputs.check_overwrite` reads as "other settings"."""
    try:
        data = json.loads(paths.blocks_json.read_text(encoding="utf-8"))
        stored = data["settings"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    everything = [f.name for f, s in core_options.specs(type(options)) if s.cache == "engine"]
    mine = core_options.cache_values(options, everything)
    # an engine field the service's engine does not use is stored as None
    same = all(stored.get(k) is None or stored.get(k) == v for k, v in mine.items())
    return data.get("settings_hash") if same else None


def parse_via_api(
    options: ParseOptions,
    api_url: str,
    *,
    api_key: str | None = None,
    echo: Callable[[str], None] | None = None,
    timeout: float = 3600.0,
) -> list[Path]:
    """Parse every input of ``options`` on the service at ``api_url``; return the Markdown paths.

    Raises:
        InputError / UsageError: the service refused an input or option (its one-line message).
        ConfigError: missing or wrong service API key.
        ServerUnreachable: the service does not answer.
        PartialSuccess: some pages (or whole jobs) failed; everything else was written.
    """
    say = echo or (lambda s: print(s, file=sys.stderr))
    key = api_key or os.environ.get(API_KEY_ENV) or None
    out_dir = Path(options.output).absolute()
    files = documents.expand_inputs(options.inputs)
    names = outputs.output_names(files)
    outputs.ensure_output_dir(out_dir)
    todo = []
    for f in files:
        paths = outputs.OutputPaths(out_dir, names[f])
        sha, pages = documents.file_sha256(f), batch.selected(f, options)
        verdict = outputs.check_overwrite(paths, options.force, sha, _same_settings(paths, options), pages)
        if verdict == outputs.UP_TO_DATE:
            say(f"{paths.markdown}: up to date (same input and settings), skipped")
        else:
            todo.append(f)
    files = todo
    fields = request_fields(options)
    headers = {"X-API-Key": key} if key else {}
    written: list[Path] = []
    problems: list[str] = []
    base = api_url.rstrip("/")
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=120, trust_env=False) as client:
            for f in files:
                md = _one(client, f, names[f], fields, out_dir, timeout, problems)
                if md is not None:
                    written.append(md)
                    say(f"{md}: parsed by {base}")
    except httpx.TransportError as exc:
        raise ServerUnreachable(
            f"ocrstack api at {base} does not answer ({type(exc).__name__})",
            f"start it (ocrstack api serve) or check curl {base}/health",
        ) from None
    if problems:
        raise PartialSuccess("; ".join(problems), "rerun the same command to retry")
    return written


def _one(
    client: httpx.Client,
    source: Path,
    name: str,
    fields: dict,
    out_dir: Path,
    timeout: float,
    problems: list[str],
) -> Path | None:
    upload_name = f"{name}{source.suffix}"
    for _ in range(MAX_429):
        with source.open("rb") as fh:
            r = client.post("/v1/jobs", files={"file": (upload_name, fh)}, data=fields)
        if r.status_code != 429:
            break
        time.sleep(float(r.headers.get("retry-after", "5")))
    _raise_for(r, source)
    job = r.json()
    deadline = time.monotonic() + timeout
    while job["status"] in ("queued", "running"):
        if time.monotonic() > deadline:
            raise ServerUnreachable(
                f"{source}: job {job['id']} not finished after {timeout:g} s",
                f"fetch it later: GET {job['status_url']}",
            )
        time.sleep(POLL)
        r = client.get(job["status_url"])
        _raise_for(r, source)
        job = r.json()
    if job["status"] in ("failed", "cancelled"):
        problems.append(f"{source}: job {job['status']}: {job.get('error') or ''}")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "result.zip"
        with client.stream("GET", job["result_url"], params={"format": "zip"}) as resp:
            if resp.status_code >= 400:
                resp.read()
                _raise_for(resp, source)
            with archive.open("wb") as fh:
                for chunk in resp.iter_bytes():
                    fh.write(chunk)
        server_name = _stem(archive)
        if server_name != name:
            raise OcrstackError(
                f"{source}: the service named the result {server_name!r}, expected {name!r}",
                "rename the input to letters, digits, '_', '.', '-' and spaces",
            )
        _extract(archive, out_dir, name)
    if job["status"] == "partial":
        problems.append(f"{source}: {job.get('error') or 'some pages failed'}")
    return out_dir / f"{name}.md"


def _stem(archive: Path) -> str:
    with zipfile.ZipFile(archive) as zf:
        for n in zf.namelist():
            if n.endswith(".blocks.json") and "/" not in n:
                return n[: -len(".blocks.json")]
    return ""
