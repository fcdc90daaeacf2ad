"""Form fields -> :class:`ocrstack.parsing.options.ParseOptions`, validated like ``ocrstack parse``.

One adapter so the HTTP API accepts the same options as the CLI with the same one-line
messages (the CLI's checks in :mod:`ocrstack.commands.parse`). What the API deliberately
does not take from a request, because it would let a client reach server-side resources:

* ``layout_model`` and prompt *files*: server paths (only built-in prompt set names);
* recognizer ``server_url``s outside the list the operator configured (no server-side fetching
  of user-given URLs: a client may only pick among ``ServiceConfig.server_urls``);
* ``output``/``inputs``/``force``: the job's own directories decide those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ocrstack.core.errors import UsageError
from ocrstack.parsing.layout import LAYOUTS
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.recognition import RECOGNIZERS

#: Form field -> (ParseOptions field, type). The CLI flag is the field name with ``-``.
FIELDS: dict[str, tuple[str, type]] = {
    "pages": ("pages", str),
    "dpi": ("dpi", int),
    "layout": ("layout", str),
    "recognizer": ("recognizer", str),
    "model": ("model", str),
    "prompts": ("prompts", str),
    "max_tokens": ("max_tokens", int),
    "timeout": ("request_timeout", float),
    "retries": ("retries", int),
    "concurrency": ("concurrency", int),
    "limit": ("limit", int),
    "max_pixels": ("max_pixels", int),
    "keep_paratext": ("keep_paratext", bool),
    "password": ("password", str),
}
#: Multi-valued field: recognizer endpoints (each must be in the configured allow-list).
SERVER_URL_FIELD = "server_url"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _convert(name: str, kind: type, raw: str) -> object:
    flag = f"--{name.replace('_', '-')}"
    if kind is bool:
        low = raw.strip().lower()
        if low in _TRUE | _FALSE:
            return low in _TRUE
        raise UsageError(f"{flag}: expected true or false, got {raw!r}", f"send {name}=true or {name}=false")
    if kind is str:
        return raw
    try:
        return kind(raw)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise UsageError(f"{flag}: expected {what}, got {raw!r}", f"send {name} as {what}") from None


def from_form(
    fields: Mapping[str, str | Sequence[str]],
    *,
    base: ParseOptions,
    allowed_server_urls: Sequence[str],
) -> ParseOptions:
    """Build the options of one job from form fields (strings), on top of the service's ``base``.

    Args:
        fields: form field name -> value (or list of values for ``server_url``); unknown names
            are rejected so a typo is not silently ignored.
        base: the service defaults (``ocrstack api serve`` flags); its ``inputs``/``output`` are
            replaced by the worker.
        allowed_server_urls: recognizer endpoints a request may name.

    Raises:
        UsageError: unknown field, bad value, unknown layout/recognizer, built-in prompt set
            unknown or a path, a server URL not configured, or out-of-range numbers (the same
            messages as ``ocrstack parse``).
    """
    values: dict[str, object] = {}
    for name, raw in fields.items():
        if name == SERVER_URL_FIELD:
            urls = [raw] if isinstance(raw, str) else list(raw)
            urls = [u.rstrip("/") for u in urls if u]
            allowed = {u.rstrip("/") for u in allowed_server_urls}
            bad = [u for u in urls if u not in allowed]
            if bad:
                raise UsageError(
                    f"--server-url {bad[0]} is not one of this service's recognizer servers",
                    f"use one of: {', '.join(sorted(allowed)) or '(none configured)'}, "
                    "or start the service with --server-url",
                )
            if urls:
                values["server_urls"] = tuple(urls)
            continue
        if name not in FIELDS:
            raise UsageError(
                f"unknown option {name!r}", f"use one of: {', '.join([*FIELDS, SERVER_URL_FIELD])}"
            )
        target, kind = FIELDS[name]
        value = raw if isinstance(raw, str) else (raw[-1] if raw else "")
        if kind is not str and kind is not bool and value == "":
            continue
        values[target] = _convert(name, kind, value)
    opts = dataclasses.replace(base, **values)
    validate(opts)
    return opts


def validate(opts: ParseOptions) -> None:
    """The CLI's option checks (``commands/parse.py`` and the registries), before a job is queued.

    Raises:
        UsageError: the first problem, worded like the CLI.
    """
    if opts.layout not in LAYOUTS:
        raise UsageError(
            f"unknown layout kind '{opts.layout}'", f"use --layout with one of: {', '.join(LAYOUTS)}"
        )
    if opts.recognizer not in RECOGNIZERS:
        raise UsageError(
            f"unknown recognizer kind '{opts.recognizer}'",
            f"use --recognizer with one of: {', '.join(RECOGNIZERS)}",
        )
    from ocrstack.parsing.recognition import prompts as prompt_sets

    if opts.prompts not in prompt_sets.builtin_names():
        raise UsageError(
            f"--prompts '{opts.prompts}' is not a built-in prompt set (files are not accepted over the API)",
            f"use one of: {', '.join(prompt_sets.builtin_names())}",
        )
    if opts.concurrency < 1:
        raise UsageError(f"--concurrency must be >= 1, got {opts.concurrency}", "use e.g. --concurrency 4")
    if opts.max_pixels < 1:
        raise UsageError(
            f"--max-pixels must be >= 1, got {opts.max_pixels}", "use e.g. --max-pixels 40000000"
        )
    if opts.max_tokens < 1 or opts.request_timeout <= 0 or opts.retries < 0:
        raise UsageError(
            f"--max-tokens {opts.max_tokens}, --timeout {opts.request_timeout:g}, --retries {opts.retries}: "
            "out of range",
            "use --max-tokens >= 1, --timeout > 0 and --retries >= 0",
        )
    if opts.limit is not None and opts.limit < 1:
        raise UsageError(f"--limit must be >= 1, got {opts.limit}", "use e.g. --limit 1, or omit --limit")
    if not 1 <= opts.dpi <= 1200:
        raise UsageError(f"--dpi must be between 1 and 1200, got {opts.dpi}", "use e.g. --dpi 200")


def to_json(opts: ParseOptions) -> dict:
    """The request-settable fields of ``opts`` as JSON (stored with the job; never the API key)."""
    out = {target: getattr(opts, target) for target, _ in FIELDS.values()}
    out["server_urls"] = list(opts.server_urls)
    return out


def from_json(data: Mapping, base: ParseOptions) -> ParseOptions:
    """Inverse of :func:`to_json` on top of ``base`` (the service's defaults, incl. the API key)."""
    values = {k: v for k, v in data.items() if k in {t for t, _ in FIELDS.values()}}
    values["server_urls"] = tuple(data.get("server_urls") or base.server_urls)
    return dataclasses.replace(base, **values)
