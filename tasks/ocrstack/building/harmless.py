"""Known-harmless build/import warnings (guide 3.2), loaded from ``data/build_harmless.yaml``.

The runner reports these as harmless so that a user does not chase them; they are
deliberately not doctor rules (the doctor lists failures).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ocrstack.core import paths
from ocrstack.core.errors import ConfigError


@dataclass(frozen=True)
class Harmless:
    """One known-harmless message: ``id``, compiled ``pattern``, ``why`` it is harmless, ``source``."""

    id: str
    pattern: re.Pattern[str]
    why: str
    example: str
    source: str


@dataclass(frozen=True)
class HarmlessHit:
    """A harmless message found in a log: the rule, 1-based ``line_no`` and the ``line``."""

    rule: Harmless
    line_no: int
    line: str


@lru_cache(maxsize=2)
def load(path: str | None = None) -> tuple[Harmless, ...]:
    """Load the harmless-warning list.

    Raises:
        ConfigError: missing file, bad YAML, missing field or invalid regex.
    """
    p = Path(path) if path else paths.data_file("build_harmless.yaml")
    data: Any = paths.read_yaml(p, "the harmless-warning list")
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("warnings"), list):
        raise ConfigError(f"{p}: expected 'schema: 1' and a 'warnings' list", "restore it from git")
    out = []
    for i, item in enumerate(data["warnings"]):
        missing = [k for k in ("id", "regex", "why", "example", "source") if not item.get(k)]
        if missing:
            raise ConfigError(f"{p}: warning #{i + 1} lacks {', '.join(missing)}", "add the missing fields")
        try:
            pattern = re.compile(item["regex"])
        except re.error as exc:
            raise ConfigError(f"{p}: warning {item['id']}: bad regex ({exc})", "fix the regex") from exc
        out.append(Harmless(item["id"], pattern, item["why"], item["example"], item["source"]))
    return tuple(out)


def scan(text: str, rules: tuple[Harmless, ...] | None = None) -> list[HarmlessHit]:
    """Return the first hit of each harmless rule in ``text``, in line order."""
    rules = load() if rules is None else rules
    hits: dict[str, HarmlessHit] = {}
    for idx, line in enumerate(text.splitlines()):
        for rule in rules:
            if rule.id not in hits and rule.pattern.search(line):
                hits[rule.id] = HarmlessHit(rule, idx + 1, line.strip()[:300])
    return sorted(hits.values(), key=lambda h: h.line_no)


def render(hits: list[HarmlessHit]) -> str:
    """Text block: one line per hit saying it is harmless and why."""
    return "\n".join(
        f"harmless [{h.rule.id}] line {h.line_no}: {h.line}\n    {h.rule.why} ({h.rule.source})" for h in hits
    )
