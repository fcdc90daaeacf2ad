"""Options declared once: one dataclass field per option, everything else derived from it.

Each option is a dataclass field made by :func:`option`; its metadata (a :class:`Spec`) holds the
help text, CLI flag(s), type conversion, range or choices and whether the value joins a cache key.
From that one declaration this module derives

* the argparse arguments (:func:`add_arguments`),
* the options object from parsed arguments or from a mapping of strings such as HTTP form
  fields (:func:`build`; both paths convert and validate with the same code, so the same bad value
  gives the same :class:`~ocrstack.core.errors.UsageError` message and fix text),
* validation (:func:`validate`: ranges and choices, one place for every caller),
* the cache-key values (:func:`cache_values`),
* where each option may be set (:attr:`Spec.where`): on the command line (:data:`CLI`), as a
  default of a long-running service (:data:`SERVICE`, e.g. an ``ocrstack api serve`` flag), or per
  request (:data:`REQUEST`, e.g. an HTTP form field of one job); :func:`specs` and
  :func:`add_arguments` select by place, so the service flags and the request fields are derived
  from the same declaration instead of being copied.

The habit is nox's ``_options.py`` (each flag declared once, with its default and help) combined
with dataclass field metadata. Nothing here knows about any verb; ``ocrstack.parsing.options`` is
the first user.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, Field, dataclass
from pathlib import Path
from typing import Any

from ocrstack.core.errors import UsageError

_KEY = "ocrstack.option"
#: Places an option may be set (:attr:`Spec.where`): the verb's own command line, a service's
#: startup flags (the default of every request it serves), one request of that service.
CLI, SERVICE, REQUEST = "cli", "service", "request"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Spec:
    """What one option declares besides its name and default (stored in the field's metadata).

    Attributes:
        help: help text; ``{default}`` is replaced by the default (formatted with ``show``),
            ``{choices}`` by the allowed values.
        flags: CLI flags, e.g. ``("-o", "--output")``; empty = not a CLI option (the name is then
            used in messages).
        convert: string -> value (``int``, ``float``, :func:`path`, ...); used for CLI arguments
            and mapping values alike. None keeps strings.
        minimum: smallest allowed value (inclusive), or None.
        above: the value must be strictly greater than this, or None.
        choices: allowed values, or a callable returning them (looked up at validation time, so
            registries are read lazily).
        example: a good value for the fix text (``use e.g. --dpi 200``).
        cache: True when the value changes what is computed (joins the cache key); ``"engine"``
            joins only when the chosen engine names the option (see :func:`cache_values`).
        cache_form: transforms the value for the key (e.g. a prompt file's content hash).
        secret: never shown in ``repr`` or outputs.
        metavar: argparse metavar.
        many: repeatable flag (``action="append"``); the value is a tuple (from a mapping: a list,
            or one comma-separated string).
        env: environment variable read when the option is not given (CLI and mapping).
        show: formats the default for ``{default}`` in ``help``.
        const: the value of a flag given without one (argparse ``nargs="?"``, e.g. ``--ray`` alone
            means a local Ray); None: the flag needs a value.
        group: title of the argparse argument group the flag is listed under (None: the parser's
            own options).
        exclusive: name of a mutually exclusive set of flags (argparse refuses two of the same
            set on one command line, e.g. ``--python`` or ``--cuda-root``); None: none.
        where: the places the option may be set, a subset of {:data:`CLI`, :data:`SERVICE`,
            :data:`REQUEST`} (default: the command line only). A declaration that adds
            :data:`REQUEST` should say beside it why a client may set it.
    """

    help: str
    flags: tuple[str, ...] = ()
    convert: Callable[[str], Any] | None = None
    minimum: float | None = None
    above: float | None = None
    choices: Iterable[str] | Callable[[], Iterable[str]] | None = None
    example: str | None = None
    cache: bool | str = False
    cache_form: Callable[[Any], Any] | None = None
    secret: bool = False
    metavar: str | None = None
    many: bool = False
    env: str | None = None
    show: Callable[[Any], str] | None = None
    const: str | None = None
    group: str | None = None
    exclusive: str | None = None
    where: frozenset[str] = frozenset({CLI})


def option(default: Any = MISSING, *, default_factory: Any = MISSING, **spec: Any) -> Any:
    """Declare one option: a dataclass field with a :class:`Spec` in its metadata.

    Args:
        default / default_factory: as for :func:`dataclasses.field`.
        **spec: the :class:`Spec` attributes (``help`` required; ``where`` may be any iterable).

    Raises:
        ValueError: ``where`` names a place other than :data:`CLI`, :data:`SERVICE`, :data:`REQUEST`.
    """
    if "where" in spec:
        spec["where"] = frozenset(spec["where"])
        unknown = spec["where"] - {CLI, SERVICE, REQUEST}
        if unknown:
            raise ValueError(f"unknown option place(s): {sorted(unknown)}")
    s = Spec(**spec)
    return dataclasses.field(
        default=default, default_factory=default_factory, repr=not s.secret, metadata={_KEY: s}
    )


def specs(cls: type, where: str | None = None) -> list[tuple[Field, Spec]]:
    """The declared options of dataclass ``cls`` (fields made by :func:`option`), in field order;
    with ``where`` (:data:`CLI`, :data:`SERVICE` or :data:`REQUEST`) only those settable there."""
    return [
        (f, f.metadata[_KEY])
        for f in dataclasses.fields(cls)
        if _KEY in f.metadata and (where is None or where in f.metadata[_KEY].where)
    ]


def flag_name(f: Field, s: Spec) -> str:
    """How messages name the option: its long CLI flag, else the field name."""
    longs = [x for x in s.flags if x.startswith("--")]
    return longs[0] if longs else (s.flags[0] if s.flags else f.name)


def default_of(f: Field) -> Any:
    """The field's default value (calling its factory), or MISSING."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def allowed(s: Spec) -> list[str]:
    """The option's choices as a list (empty when it declares none)."""
    if s.choices is None:
        return []
    return list(s.choices() if callable(s.choices) else s.choices)


# -- converters ------------------------------------------------------------------------------


def path(value: str | os.PathLike) -> Path:
    """Converter: an absolute path (``~`` expanded, relative paths against the current directory)."""
    return Path(os.path.abspath(os.path.expanduser(value)))


def boolean(value: str | bool) -> bool:
    """Converter: ``true/false``, ``1/0``, ``yes/no``, ``on/off`` (case-insensitive)."""
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in _TRUE or v in _FALSE:
        return v in _TRUE
    raise ValueError(f"not a boolean: {value!r}")


# -- argparse --------------------------------------------------------------------------------


def add_arguments(
    parser: argparse.ArgumentParser, cls: type, where: str = CLI, prefix: str = "", **text: str
) -> None:
    """Add one argparse argument per declared option of ``cls`` that has flags and may be set
    ``where`` (:data:`CLI` for the verb's own options, :data:`SERVICE` for a service's defaults).

    Defaults are ``argparse.SUPPRESS``: an absent flag leaves no attribute, so :func:`build` falls
    back to the declaration's default (or ``env``). Values stay strings here and are converted by
    :func:`build`, so the CLI and a mapping share conversion and messages. An option without a
    default is a required flag; a boolean flag flips its default (``--no-x`` for a default True);
    flags of one :attr:`Spec.exclusive` set go into one mutually exclusive group.
    ``text`` fills further ``{name}`` fields of the help (one declaration worded per verb).
    ``prefix`` starts every ``dest`` (a subcommand's ``--port`` kept apart from its parent's
    ``--port`` in the one namespace argparse fills); pass the same to :func:`namespace_values`.
    """
    groups: dict[str, Any] = {}
    exclusive: dict[str, Any] = {}
    for f, s in specs(cls, where):
        if not s.flags:
            continue
        d = default_of(f)
        shown = "" if d is MISSING else (s.show(d) if s.show else d)
        kw: dict[str, Any] = {
            "dest": prefix + f.name,
            "default": argparse.SUPPRESS,
            "help": s.help.format(default=shown, choices=", ".join(allowed(s)), **text),
        }
        if d is MISSING:
            kw["required"] = True
        if f.type in (bool, "bool"):
            kw["action"] = "store_false" if d is True else "store_true"
        else:
            kw["metavar"] = s.metavar or flag_name(f, s).lstrip("-").upper().replace("-", "_")
            if s.many:
                kw["action"] = "append"
            elif s.const is not None:
                kw["nargs"], kw["const"] = "?", s.const
        if s.group is not None and s.group not in groups:
            groups[s.group] = parser.add_argument_group(s.group)
        target = groups[s.group] if s.group is not None else parser
        if s.exclusive is not None:
            if s.exclusive not in exclusive:
                exclusive[s.exclusive] = target.add_mutually_exclusive_group()
            target = exclusive[s.exclusive]
        target.add_argument(*s.flags, **kw)


def namespace_values(
    args: argparse.Namespace, cls: type, where: str = CLI, prefix: str = ""
) -> dict[str, Any]:
    """The declared options of ``cls`` settable ``where`` and present in ``args`` (given on the
    command line; an option of another class with the same ``dest`` is not taken), by field name;
    ``prefix`` as given to :func:`add_arguments`."""
    return {
        f.name: getattr(args, prefix + f.name) for f, _ in specs(cls, where) if hasattr(args, prefix + f.name)
    }


# -- building and validation -------------------------------------------------------------------


def _convert(f: Field, s: Spec, raw: Any) -> Any:
    if raw is None:
        return None
    if s.many:
        # a mapping gives one comma-separated string; a repeated CLI flag gives a list (kept as is)
        parts = [p.strip() for p in raw.split(",") if p.strip()] if isinstance(raw, str) else list(raw)
        return tuple(s.convert(p) if s.convert and isinstance(p, str) else p for p in parts)
    if f.type in (bool, "bool"):
        conv: Callable[[Any], Any] = boolean
    else:
        conv = s.convert or (lambda v: v)
    if not isinstance(raw, str) and conv is not boolean:
        return raw  # already typed (Python callers)
    try:
        return conv(raw)
    except (TypeError, ValueError):
        kind = getattr(conv, "__name__", "value")
        shown = "the value given" if s.secret else repr(raw)
        raise UsageError(
            f"{flag_name(f, s)}: {shown} is not a valid {kind}",
            f"use e.g. {flag_name(f, s)} {s.example}" if s.example else f"check {flag_name(f, s)}",
        ) from None


def build(cls: type, values: Mapping[str, Any], **fixed: Any) -> Any:
    """Make ``cls`` from ``values`` (strings or typed values by field name), then validate.

    Unknown names are refused; absent options take ``env`` (when declared and set) or the default;
    ``fixed`` values (e.g. ``inputs``) are passed through unconverted.

    Raises:
        UsageError: an unknown name, a value that does not convert, or one out of range.
    """
    known = {f.name: (f, s) for f, s in specs(cls)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise UsageError(f"unknown option(s): {', '.join(unknown)}", f"use only: {', '.join(known)}")
    kwargs: dict[str, Any] = {}
    for name, (f, s) in known.items():
        if name in values:
            kwargs[name] = _convert(f, s, values[name])
        elif s.env and os.environ.get(s.env):
            kwargs[name] = _convert(f, s, os.environ[s.env])
    obj = cls(**kwargs, **fixed)
    validate(obj)
    return obj


def validate(obj: Any) -> None:
    """Check every declared option of dataclass instance ``obj`` against its range and choices.

    None is accepted where the default is None (unset optional values); each value of a
    repeatable (``many``) option is checked against the choices.

    Raises:
        UsageError: ``{flag} must be a finite number, got nan`` (``nan``, ``inf``: a float option),
            ``{flag} must be >= {minimum}, got {value}`` (or ``> {above}``), or
            ``unknown {name} kind '{value}'`` listing the choices; the fix names a good value.
    """
    for f, s in specs(type(obj)):
        value = getattr(obj, f.name)
        if value is None:
            continue
        flag = flag_name(f, s)
        fix = f"use e.g. {flag} {s.example}" if s.example else f"check {flag}"
        if isinstance(value, float) and not math.isfinite(value):  # nan passes every comparison
            raise UsageError(f"{flag} must be a finite number, got {value}", fix)
        if s.minimum is not None and value < s.minimum:
            raise UsageError(f"{flag} must be >= {s.minimum:g}, got {value}", fix)
        if s.above is not None and value <= s.above:
            raise UsageError(f"{flag} must be > {s.above:g}, got {value:g}", fix)
        for item in value if s.many else (value,):  # each value of a repeatable flag
            if s.choices is not None and item not in allowed(s):
                raise UsageError(
                    f"unknown {flag.removeprefix('--')} kind '{item}'",
                    f"use {flag} with one of: {', '.join(allowed(s))}",
                )


def cache_values(obj: Any, engine_fields: Iterable[str] = ()) -> dict[str, Any]:
    """The cache-key part of ``obj``: every option declared with ``cache``, by field name.

    ``cache=True`` gives the value (a Path as a string, ``cache_form(value)`` when declared);
    ``cache="engine"`` gives the value only when its name is in ``engine_fields`` (the chosen
    engine says it changes that engine's output) and None otherwise.
    """
    out: dict[str, Any] = {}
    wanted = set(engine_fields)
    for f, s in specs(type(obj)):
        if not s.cache:
            continue
        value = getattr(obj, f.name)
        if s.cache == "engine" and f.name not in wanted:
            out[f.name] = None
        elif s.cache_form is not None and value is not None:
            out[f.name] = s.cache_form(value)
        else:
            out[f.name] = str(value) if isinstance(value, Path) else value
    return out


def project(obj: Any, cls: type, **extra: Any) -> Any:
    """Build dataclass ``cls`` from the same-named fields of ``obj`` (an engine's nested options
    out of the flat options object), plus ``extra``; no field is copied by hand."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    return cls(**{n: getattr(obj, n) for n in names if hasattr(obj, n) and n not in extra}, **extra)
