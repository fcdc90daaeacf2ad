"""Form fields -> :class:`ocrstack.parsing.options.ParseOptions`, validated like ``ocrstack parse``.

Which options a request may set is declared once, beside each option in
:mod:`ocrstack.parsing.options` (``where=... REQUEST``, with the reason); :data:`FIELDS` (the form
fields, the OpenAPI form schema, what a job stores) and :data:`SERVICE_FIELDS` (the
``ocrstack api serve`` flags) are derived from it. Form field names are the :class:`ParseOptions`
field names (``dpi``, ``pages``, ``request_timeout``, ``server_urls``, ...). Conversion and range
checks are the CLI's own (:func:`ocrstack.parsing.options.from_mapping`), so a bad value gets the
same one-line message and fix as ``ocrstack parse``.

Besides the options that are not request-settable (server paths, the recognizer API key, what the
service decides about a job's files), two values of request-settable options are refused here,
because they would let a client reach server-side resources:

* prompt *files* (server paths): only built-in prompt set names;
* recognizer ``server_urls`` outside the list the operator configured (no server-side fetching
  of user-given URLs: a client may only pick among ``ocrstack api serve --server-url``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ocrstack.api.jobsecrets import SECRET_FIELDS
from ocrstack.client.http import base_url, public_url
from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError
from ocrstack.parsing import options as parse_options
from ocrstack.parsing.options import ParseOptions

#: Request-settable ParseOptions fields (form field name -> declaration), in declaration order.
FIELDS: dict[str, opt.Spec] = {f.name: s for f, s in opt.specs(ParseOptions, opt.REQUEST)}
#: ParseOptions fields a service sets for all its jobs (``ocrstack api serve`` flags).
SERVICE_FIELDS: tuple[str, ...] = tuple(f.name for f, _ in opt.specs(ParseOptions, opt.SERVICE))
#: Fields whose empty form value means "not given" (a number cannot be empty).
_NUMBERS = (int, float)


def _urls(raw: str | Sequence[str]) -> list[str]:
    items = [raw] if isinstance(raw, str) else list(raw)
    return [u.strip().rstrip("/") for item in items for u in item.split(",") if u.strip()]


def _refuse(name: str) -> None:
    """Refuse a form field that is no request-settable option: one the service sets, or unknown.

    Raises:
        UsageError: always; a service-only option is named with the ``api serve`` flag that sets it.
    """
    declared = {f.name: (f, s) for f, s in opt.specs(ParseOptions)}
    if name not in declared:
        raise UsageError(f"unknown option {name!r}", f"use one of: {', '.join(FIELDS)}")
    f, s = declared[name]
    setter = f"ocrstack api serve {opt.flag_name(f, s)}" if opt.SERVICE in s.where else "the service"
    raise UsageError(
        f"option {name!r} cannot be set per request (it is set by {setter})",
        f"leave it out; a job may set only: {', '.join(FIELDS)}",
    )


def _server_urls(raw: str | Sequence[str], allowed_server_urls: Sequence[str]) -> tuple[str, ...]:
    """The configured servers a job names. A server is named by its URL without credentials (the
    form messages show, :func:`~ocrstack.client.http.public_url`; a trailing ``/v1`` is optional,
    :func:`~ocrstack.client.http.base_url`); the job gets the configured URL,
    credentials included, and no answer ever shows them (issue 25 item 7)."""
    allowed = {public_url(base_url(u)): u.rstrip("/") for u in allowed_server_urls}
    named = [public_url(base_url(u)) for u in _urls(raw)]
    bad = [u for u in named if u not in allowed]
    if bad:
        raise UsageError(
            f"server URL {bad[0]} is not one of this service's recognizer servers",
            f"use one of: {', '.join(sorted(allowed)) or '(none configured)'}; the operator adds servers "
            "with ocrstack api serve --server-url URL",
        )
    return tuple(allowed[u] for u in named)


def from_form(
    fields: Mapping[str, str | Sequence[str]],
    *,
    base: ParseOptions,
    allowed_server_urls: Sequence[str],
    bounds: Mapping[str, tuple[float, str]] | None = None,
) -> ParseOptions:
    """Build the options of one job from form fields (strings) on top of the service's ``base``.

    Args:
        fields: field name -> value (``server_urls`` may be a list or comma-separated); unknown
            names and options a request may not set are rejected, so nothing is silently ignored.
        base: the service defaults (``ocrstack api serve`` flags, incl. the recognizer API key).
        allowed_server_urls: recognizer endpoints a request may name.
        bounds: field -> ``(largest value, api serve flag)`` of the numbers a request may set
            (:func:`ocrstack.api.config.request_bounds`); only the request's own values are bounded.

    Raises:
        UsageError: unknown or service-only field, bad value, unknown layout/recognizer, prompt set
            not built in, server URL not configured, out-of-range (or ``nan``/``inf``) number: the
            CLI's message and fix; a number over its bound, naming the flag that raises it.
    """
    request: dict[str, object] = {}
    for name, raw in fields.items():
        spec = FIELDS.get(name)
        if spec is None:
            _refuse(name)
        elif name == "server_urls":
            urls = _server_urls(raw, allowed_server_urls)
            if urls:
                request[name] = urls
        elif spec.many:
            request[name] = raw
        else:
            value = raw if isinstance(raw, str) else (raw[-1] if raw else "")
            if not (value == "" and spec.convert in _NUMBERS):
                request[name] = value
    prompts = str(request.get("prompts", base.prompts))
    if prompts != base.prompts:
        _builtin_prompts(prompts)
    merged = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.name != "inputs"}
    merged.update(request)
    opts = parse_options.from_mapping(merged)
    for name, (bound, flag) in (bounds or {}).items():
        if name in request and getattr(opts, name) is not None and getattr(opts, name) > bound:
            _over(name, getattr(opts, name), bound, flag)
    return opts


def _over(name: str, value: float, bound: float, flag: str) -> None:
    """Refuse a request's number over the service's bound (issue 25 item 2: a request must not make
    the service render 10 GB pages or retry a block a billion times).

    Raises:
        UsageError: always, naming the field, its bound and the ``api serve`` flag that sets it.
    """
    raise UsageError(
        f"{name} {value:g} is over this service's limit of {bound:g}",
        f"send {name} <= {bound:g} (the operator sets the limit: ocrstack api serve {flag})",
    )


def _builtin_prompts(name: str) -> None:
    from ocrstack.parsing.recognition.openai import prompts as prompt_sets

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


def service_defaults(values: Mapping[str, Any]) -> ParseOptions:
    """The defaults of every job of a service: the parse options marked ``SERVICE`` given as
    ``ocrstack api serve`` flags (``values`` by field name, strings converted like the CLI's),
    declared defaults (and ``$OCR_LAYOUT_MODEL_DIR``) for the rest, the recognizer key from
    ``$OPENAI_API_KEY``, server URLs without a trailing slash; checked like a job's options.

    Raises:
        UsageError: a name that is not service-settable, or a bad value (flag and fix named).
    """
    unknown = sorted(set(values) - set(SERVICE_FIELDS))
    if unknown:
        raise UsageError(
            f"not a service option: {', '.join(unknown)}", f"use only: {', '.join(SERVICE_FIELDS)}"
        )
    base = parse_options.from_mapping(values)
    base = dataclasses.replace(
        base,
        server_urls=tuple(u.rstrip("/") for u in base.server_urls),
        api_key=os.environ.get("OPENAI_API_KEY") or None,
    )
    validate(base)
    return base


def to_json(opts: ParseOptions) -> dict:
    """The request-settable fields of ``opts`` as JSON (stored with the job; never the API key, a
    server URL's credentials nor a PDF password: :mod:`ocrstack.api.jobsecrets`)."""
    data = {
        name: list(value) if isinstance(value, tuple) else str(value) if isinstance(value, Path) else value
        for name in FIELDS
        for value in (getattr(opts, name),)
    }
    # a server's credentials stay in the service's flags, not in the job database (issue 25 item 7)
    data["server_urls"] = [public_url(u) for u in data["server_urls"]]
    for name in SECRET_FIELDS:  # kept in memory only (ocrstack.api.jobsecrets)
        data[name] = None
    return data


def from_json(data: Mapping, base: ParseOptions) -> ParseOptions:
    """Inverse of :func:`to_json` on top of ``base`` (the service's defaults, incl. the API key and
    the configured server URLs with their credentials, which :func:`to_json` leaves out).

    A job stored before a field became request-settable lacks it and takes the service default;
    a stored name that is no request-settable field (any more) is ignored.
    """
    values = {k: v for k, v in data.items() if k in FIELDS and not FIELDS[k].many}
    for name in (k for k, s in FIELDS.items() if s.many):
        values[name] = tuple(data.get(name) or getattr(base, name))
    configured = {public_url(u): u for u in base.server_urls}  # stored without credentials
    values["server_urls"] = tuple(configured.get(u, u) for u in values["server_urls"])
    return dataclasses.replace(base, **values)
