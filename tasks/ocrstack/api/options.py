"""Form fields -> :class:`ocrstack.parsing.options.ParseOptions`, validated like ``ocrstack parse``.

Form field names are the :class:`ParseOptions` field names (``dpi``, ``pages``,
``request_timeout``, ``server_urls``, ...). Conversion and range checks are the CLI's own:
:func:`ocrstack.parsing.options.from_mapping` (each option declared once), so a bad value gets the
same one-line message and fix as ``ocrstack parse``.

What the API deliberately does not take from a request, because it would let a client reach
server-side resources:

* ``layout_model`` and prompt *files* (server paths): only built-in prompt set names;
* recognizer ``server_urls`` outside the list the operator configured (no server-side fetching
  of user-given URLs: a client may only pick among ``ocrstack api serve --server-url``);
* ``inputs``/``output``/``force``/``save_layout_images``/``api_key``: the service decides those.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ocrstack.core.errors import UsageError
from ocrstack.parsing import options as parse_options
from ocrstack.parsing.options import ParseOptions

#: Request-settable ParseOptions fields and their type (the OpenAPI schema lists them).
FIELDS: dict[str, type] = {
    "pages": str,
    "dpi": int,
    "layout": str,
    "recognizer": str,
    "model": str,
    "prompts": str,
    "max_tokens": int,
    "request_timeout": float,
    "retries": int,
    "concurrency": int,
    "limit": int,
    "max_pixels": int,
    "keep_paratext": bool,
    "text_layer": str,
    "password": str,
    "server_urls": tuple,
}
#: Service-level fields a job inherits from ``ocrstack api serve`` and a request cannot set.
SERVICE_FIELDS = ("layout_model", "api_key")


def _urls(raw: str | Sequence[str]) -> list[str]:
    items = [raw] if isinstance(raw, str) else list(raw)
    return [u.strip().rstrip("/") for item in items for u in item.split(",") if u.strip()]


def from_form(
    fields: Mapping[str, str | Sequence[str]],
    *,
    base: ParseOptions,
    allowed_server_urls: Sequence[str],
) -> ParseOptions:
    """Build the options of one job from form fields (strings) on top of the service's ``base``.

    Args:
        fields: field name -> value (``server_urls`` may be a list or comma-separated); unknown
            names are rejected so a typo is not silently ignored.
        base: the service defaults (``ocrstack api serve`` flags, incl. the recognizer API key).
        allowed_server_urls: recognizer endpoints a request may name.

    Raises:
        UsageError: unknown field, bad value, unknown layout/recognizer, prompt set not built in,
            server URL not configured, out-of-range number: the CLI's message and fix.
    """
    request: dict[str, object] = {}
    for name, raw in fields.items():
        if name not in FIELDS:
            raise UsageError(f"unknown option {name!r}", f"use one of: {', '.join(FIELDS)}")
        if name == "server_urls":
            urls = _urls(raw)
            allowed = {u.rstrip("/") for u in allowed_server_urls}
            bad = [u for u in urls if u not in allowed]
            if bad:
                raise UsageError(
                    f"--server-url {bad[0]} is not one of this service's recognizer servers",
                    f"use one of: {', '.join(sorted(allowed)) or '(none configured)'}, "
                    "or start the service with --server-url",
                )
            if urls:
                request[name] = tuple(urls)
            continue
        value = raw if isinstance(raw, str) else (raw[-1] if raw else "")
        if value == "" and FIELDS[name] in (int, float):
            continue
        request[name] = value
    prompts = str(request.get("prompts", base.prompts))
    if prompts != base.prompts:
        _builtin_prompts(prompts)
    merged = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.name != "inputs"}
    merged.update(request)
    return parse_options.from_mapping(merged)


def _builtin_prompts(name: str) -> None:
    from ocrstack.parsing.recognition import prompts as prompt_sets

    if name not in prompt_sets.builtin_names():
        raise UsageError(
            f"--prompts '{name}' is not a built-in prompt set (files are not accepted over the API)",
            f"use one of: {', '.join(prompt_sets.builtin_names())}",
        )


def validate(opts: ParseOptions) -> None:
    """Check the service defaults (``ocrstack api serve`` flags) like a job's options.

    Raises:
        UsageError: as :func:`from_form`.
    """
    from_form({}, base=opts, allowed_server_urls=opts.server_urls)


def to_json(opts: ParseOptions) -> dict:
    """The request-settable fields of ``opts`` as JSON (stored with the job; never the API key)."""
    out = {name: getattr(opts, name) for name in FIELDS}
    out["server_urls"] = list(opts.server_urls)
    return out


def from_json(data: Mapping, base: ParseOptions) -> ParseOptions:
    """Inverse of :func:`to_json` on top of ``base`` (the service's defaults, incl. the API key)."""
    values = {k: v for k, v in data.items() if k in FIELDS}
    values["server_urls"] = tuple(data.get("server_urls") or base.server_urls)
    return dataclasses.replace(base, **values)
