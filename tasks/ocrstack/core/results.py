"""Result objects shared by every health check (preflight, versions check, verify, toolchain check).

One :class:`Check` per thing checked, with a stable status; a :class:`Report`
renders as text or JSON and decides the exit status. A check that did not run
is ``not-run`` with its reason and is never counted as passed (guide 10: report
only what was actually checked). Pattern from pipx ``result.py``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum

from ocrstack.core.errors import CheckFailed, OcrstackError


class Status(str, Enum):
    """Outcome of one check."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    NOT_RUN = "not-run"


@dataclass(frozen=True)
class Check:
    """One check: ``name`` (stable id), ``status``, ``detail`` (what was seen) and ``fix`` (what to do)."""

    name: str
    status: Status
    detail: str = ""
    fix: str = ""
    expected: str | None = None
    found: str | None = None


@dataclass
class Report:
    """An ordered list of checks with a title; ``ok`` is False if any check failed."""

    title: str
    checks: list[Check] = field(default_factory=list)

    def add(self, check: Check) -> Check:
        """Append ``check`` and return it."""
        self.checks.append(check)
        return check

    @property
    def ok(self) -> bool:
        """True when no check failed (warnings and not-run checks do not fail a report)."""
        return all(c.status is not Status.FAIL for c in self.checks)

    def failures(self) -> list[Check]:
        """The checks whose status is ``fail``, in order."""
        return [c for c in self.checks if c.status is Status.FAIL]

    def raise_if_failed(self, what: str, error: type[OcrstackError] = CheckFailed) -> None:
        """Raise ``error("<what> failed: name: detail; ...", first fix)`` when any check failed."""
        failed = self.failures()
        if failed:
            listed = "; ".join(f"{c.name}: {c.detail}" if c.detail else c.name for c in failed)
            raise error(f"{what} failed: {listed}", next((c.fix for c in failed if c.fix), None))

    def counts(self) -> dict[str, int]:
        """Return ``{status: count}`` for every status, zeros included."""
        out = {s.value: 0 for s in Status}
        for c in self.checks:
            out[c.status.value] += 1
        return out

    def to_json(self) -> str:
        """Return the report as JSON: ``{"title", "ok", "counts", "checks": [...]}`` (shape pinned)."""
        checks = [{**asdict(c), "status": c.status.value} for c in self.checks]
        return json.dumps(
            {"title": self.title, "ok": self.ok, "counts": self.counts(), "checks": checks},
            indent=2,
            ensure_ascii=False,
        )

    def to_text(self) -> str:
        """Return a human-readable table, one line per check plus fixes, and a summary line."""
        lines = [self.title]
        for c in self.checks:
            line = f"  [{c.status.value:>7}] {c.name}"
            if c.detail:
                line += f": {c.detail}"
            lines.append(line)
            if c.fix and c.status in (Status.FAIL, Status.WARN):
                lines.append(f"            fix: {c.fix}")
        n = self.counts()
        lines.append(f"{n['pass']} passed, {n['fail']} failed, {n['warn']} warnings, {n['not-run']} not run")
        return "\n".join(lines)
