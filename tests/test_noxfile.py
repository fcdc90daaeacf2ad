"""noxfile.py is thin wiring: every `ocrstack` call names an existing subcommand."""

from __future__ import annotations

import ast
from pathlib import Path

from ocrstack.cli import subcommands


def ocrstack_calls(path: Path) -> list[list[str]]:
    calls = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "run" and node.args:
            words = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if words and words[0] == "ocrstack":
                calls.append(words[1:])
    return calls


def test_nox_sessions_call_real_subcommands(repo: Path) -> None:
    verbs = subcommands()
    calls = ocrstack_calls(repo / "noxfile.py")
    assert calls, "expected sessions that call ocrstack"
    for words in calls:
        path = [w for w in words if not w.startswith("-")]
        assert any(" ".join(path[:n]) in verbs for n in range(len(path), 0, -1)), words
