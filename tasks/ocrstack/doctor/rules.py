"""Load and validate the doctor rules (``tasks/ocrstack/data/doctor_rules.yaml``).

A rule maps one known failure message to its cause and fix. Fields (see the
YAML header): ``id``, ``stage`` (build|serve|parse|pixi), ``regex`` (or null for
advice-only rules whose symptom prints nothing), optional ``unless_after``,
``cause``, ``fix``, ``source`` (guide section and/or public report URL) and
``guide_row`` (the verbatim first cell of the guide 8 table row it covers).

Texts may reference pins from ``envs/versions.yaml``: ``{pin:a.b}`` (the value),
``{pin:a.b|base}`` (base version, ``5.19.0.dev0 -> 5.19.0``) and, in regexes,
``{pin:a.b|re}`` / ``{pin:a.b|base|re}`` (regex-escaped), so no version literal
is repeated here.

Rules that concern only one serving back-end live with it (:attr:`Backend.rules_file
<ocrstack.backends.base.Backend.rules_file>`); :func:`load_rules` adds those of every
registered back-end, each tagged with its ``backend``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ocrstack import versions
from ocrstack.core import paths
from ocrstack.core.errors import ConfigError

STAGES = ("build", "serve", "parse", "pixi")
_PIN = re.compile(r"\{pin:([A-Za-z0-9_.\-]+)((?:\|(?:base|re))*)\}")
_REQUIRED = ("id", "stage", "cause", "fix", "source")


@dataclass(frozen=True)
class Rule:
    """One diagnosis rule.

    Attributes:
        id: stable identifier.
        stage: where the message appears: build, serve, parse or pixi.
        pattern: compiled regex searched in each log line; None for advice-only rules.
        unless_after: a hit is dropped when this regex matches any later line.
        cause, fix: one or two sentences each, pins substituted.
        source: "guide N" and/or public report URLs the message text comes from.
        guide_row: verbatim first cell of the guide 8 table row, or None.
        generic: a broad rule (e.g. any HTTP 400); its hit on a line is dropped when a
            non-generic rule matched the same line.
        backend: the serving back-end whose rules file holds it (None: ``doctor_rules.yaml``).
    """

    id: str
    stage: str
    pattern: re.Pattern[str] | None
    cause: str
    fix: str
    source: str
    guide_row: str | None = None
    unless_after: re.Pattern[str] | None = None
    generic: bool = False
    backend: str | None = None


def default_rules_file() -> Path:
    """``ocrstack/data/doctor_rules.yaml`` inside the package."""
    return paths.data_file("doctor_rules.yaml")


def expand_pins(text: str, *, regex: bool = False, versions_file: Path | None = None) -> str:
    """Replace ``{pin:a.b[|base][|re]}`` in ``text`` with values from envs/versions.yaml.

    Raises:
        ConfigError: unknown pin, or ``|re`` used outside a regex.
    """

    def sub(m: re.Match[str]) -> str:
        value = str(versions.pin(m.group(1), versions_file))
        mods = [x for x in m.group(2).split("|") if x]
        if "base" in mods:
            from packaging.version import Version

            value = Version(value).base_version
        if "re" in mods:
            if not regex:
                raise ConfigError(
                    f"'|re' used outside a regex in {m.group(0)}", "use it only in regex fields"
                )
            value = re.escape(value)
        return value

    return _PIN.sub(sub, text)


def _compile(rule_id: str, field: str, raw: Any, versions_file: Path | None) -> re.Pattern[str] | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise ConfigError(
            f"doctor rule '{rule_id}': {field} must be a non-empty string or null", "fix doctor_rules.yaml"
        )
    try:
        return re.compile(expand_pins(raw, regex=True, versions_file=versions_file))
    except re.error as exc:
        raise ConfigError(
            f"doctor rule '{rule_id}': invalid {field} ({exc})", "fix the regular expression"
        ) from exc


def parse_rules(
    data: Any,
    versions_file: Path | None = None,
    origin: str = "doctor_rules.yaml",
    backend: str | None = None,
) -> list[Rule]:
    """Validate parsed YAML and return the rules in file order (tagged with ``backend``, if given).

    Raises:
        ConfigError: wrong schema, missing fields, unknown stage, duplicate id, bad regex.
    """
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("rules"), list):
        raise ConfigError(f"{origin}: expected 'schema: 1' and a 'rules' list", "restore the file from git")
    out: list[Rule] = []
    seen: set[str] = set()
    for i, item in enumerate(data["rules"]):
        if not isinstance(item, dict):
            raise ConfigError(f"{origin}: rule #{i + 1} is not a mapping", "fix the YAML")
        missing = [k for k in _REQUIRED if not item.get(k)]
        if missing or "regex" not in item:
            rid = item.get("id", f"#{i + 1}")
            raise ConfigError(
                f"{origin}: rule {rid} lacks {', '.join(missing or ['regex'])}", "add the field"
            )
        rid = str(item["id"])
        if rid in seen:
            raise ConfigError(f"{origin}: duplicate rule id '{rid}'", "give each rule its own id")
        seen.add(rid)
        if item["stage"] not in STAGES:
            raise ConfigError(
                f"{origin}: rule {rid} has unknown stage '{item['stage']}'", f"use one of {STAGES}"
            )
        out.append(
            Rule(
                id=rid,
                stage=str(item["stage"]),
                pattern=_compile(rid, "regex", item["regex"], versions_file),
                cause=expand_pins(str(item["cause"]).strip(), versions_file=versions_file),
                fix=expand_pins(str(item["fix"]).strip(), versions_file=versions_file),
                source=str(item["source"]).strip(),
                guide_row=item.get("guide_row"),
                unless_after=_compile(rid, "unless_after", item.get("unless_after"), versions_file),
                generic=bool(item.get("generic", False)),
                backend=backend,
            )
        )
    return out


@lru_cache(maxsize=4)
def _load_cached(path: str, backends: tuple[str, ...]) -> tuple[Rule, ...]:
    from ocrstack.backends import registry  # the back-ends, when rules are read (not at start-up)

    data = paths.read_yaml(path, "doctor rules", "reinstall ocrstack or restore the file from git")
    rules = parse_rules(data, origin=path)
    for name in backends:
        backend = registry.get(name)
        extra = backend.doctor_rule_data()
        if extra is not None:
            rules += parse_rules(extra, origin=str(backend.rules_path()), backend=name)
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise ConfigError(f"doctor rule id '{rule.id}' is defined twice", "give each rule its own id")
        seen.add(rule.id)
    return tuple(rules)


def load_rules(path: Path | None = None) -> list[Rule]:
    """Return the rules from ``path`` (default: the packaged doctor_rules.yaml), then those of
    every registered serving back-end (cached per file and set of back-ends).

    Raises:
        ConfigError: file missing, invalid YAML, an invalid rule, or one id defined twice.
    """
    from ocrstack.backends import registry

    return list(_load_cached(str(path or default_rules_file()), registry.names()))
