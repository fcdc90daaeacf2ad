"""Match log text against the doctor rules and render the findings."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from ocrstack.core.errors import InputError
from ocrstack.doctor.rules import Rule, load_rules

#: ANSI colour / cursor sequences (pixi, cargo-style and tqdm output); removed before matching.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
MAX_LINE_CHARS = 400


@dataclass(frozen=True)
class Finding:
    """One matched rule.

    Attributes:
        rule_id: the rule's id.
        line_no: 1-based line number of the first matching line.
        line: that line (ANSI codes removed, stripped, cut to 400 characters).
        cause, fix, source: copied from the rule.
        stage: build | serve | parse | pixi.
        occurrences: how many lines matched this rule (only the first is shown).
    """

    rule_id: str
    line_no: int
    line: str
    cause: str
    fix: str
    source: str
    stage: str
    occurrences: int = 1


def clean(line: str) -> str:
    """Remove ANSI escapes and keep the last carriage-return segment (progress bars)."""
    line = _ANSI.sub("", line)
    if "\r" in line:
        parts = [p for p in line.split("\r") if p.strip()]
        line = parts[-1] if parts else ""
    return line


def diagnose(
    text: str, rules: Iterable[Rule] | None = None, stages: Iterable[str] | None = None
) -> list[Finding]:
    """Return the findings for ``text`` (a whole log), one per matched rule, sorted by line number.

    Args:
        text: log text; lines are split on ``\\n``.
        rules: rules to use (default: :func:`ocrstack.doctor.load_rules`).
        stages: only rules of these stages (default: all).
    Returns:
        ``[Finding, ...]``; empty when nothing matched. A rule with ``unless_after``
        is dropped when that regex matches a line after its last hit; a ``generic`` rule
        does not report lines that a specific rule already explains.
    """
    rule_list = [r for r in (load_rules() if rules is None else rules) if r.pattern is not None]
    if stages is not None:
        wanted = set(stages)
        rule_list = [r for r in rule_list if r.stage in wanted]
    lines = [clean(raw) for raw in text.split("\n")]
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    count: dict[str, int] = {}
    for idx, line in enumerate(lines):
        hits = [r for r in rule_list if r.pattern is not None and r.pattern.search(line)]
        if any(not r.generic for r in hits):
            hits = [r for r in hits if not r.generic]  # the specific rule explains this line
        for rule in hits:
            first.setdefault(rule.id, idx)
            last[rule.id] = idx
            count[rule.id] = count.get(rule.id, 0) + 1
    findings: list[Finding] = []
    by_id = {r.id: r for r in rule_list}
    for rid, idx in first.items():
        rule = by_id[rid]
        if rule.unless_after is not None and any(rule.unless_after.search(x) for x in lines[last[rid] + 1 :]):
            continue
        shown = lines[idx].strip()
        if len(shown) > MAX_LINE_CHARS:
            shown = shown[: MAX_LINE_CHARS - 3] + "..."
        findings.append(
            Finding(rid, idx + 1, shown, rule.cause, rule.fix, rule.source, rule.stage, count[rid])
        )
    findings.sort(key=lambda f: (f.line_no, f.rule_id))
    return findings


def read_log(source: str | Path) -> str:
    """Read a log file, or stdin for ``-``; undecodable bytes are replaced.

    Raises:
        InputError: the file does not exist or cannot be read.
    """
    if str(source) == "-":
        return sys.stdin.read()
    path = Path(source)
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError as exc:
        raise InputError(
            f"{path}: log file not found", "pass the path of an existing log, or - for stdin"
        ) from exc
    except OSError as exc:
        raise InputError(
            f"{path}: cannot read log ({exc.strerror})", "check the path and permissions"
        ) from exc


def diagnose_file(source: str | Path, stages: Iterable[str] | None = None) -> list[Finding]:
    """:func:`diagnose` the contents of a log file (``-`` = stdin)."""
    return diagnose(read_log(source), stages=stages)


def render(findings: list[Finding], name: str = "log") -> str:
    """Human-readable text: one block per finding (line, cause, fix, source), or a plain 'nothing matched'."""
    if not findings:
        return (
            f"doctor: no known error pattern matched in {name}. "
            "Read the last error lines yourself; guide section 8 lists the known failures."
        )
    out = [f"doctor: {len(findings)} known problem(s) in {name}"]
    for f in findings:
        more = f" (+{f.occurrences - 1} more lines)" if f.occurrences > 1 else ""
        out.append(f"\n[{f.rule_id}] {f.stage}, line {f.line_no}{more}:")
        out.append(f"    {f.line}")
        out.append(f"  cause: {f.cause}")
        out.append(f"  fix:   {f.fix}")
        out.append(f"  source: {f.source}")
    return "\n".join(out)


def to_json(findings: list[Finding], name: str = "log") -> str:
    """JSON: ``{"log": name, "matched": bool, "findings": [Finding fields...]}``."""
    return json.dumps(
        {"log": name, "matched": bool(findings), "findings": [asdict(f) for f in findings]},
        indent=2,
        ensure_ascii=False,
    )
