"""Every ``--flag`` named in a fix text of the package exists (issue 10 item 3: the fix text once
suggested ``--request-timeout``, a flag that does not exist; it is ``--timeout``).

Fix texts are found in the source with :mod:`ast`: the remedy (second argument or ``remedy=``) of
every :class:`ocrstack.core.errors.OcrstackError` subclass raised, every ``x.remedy = ...``, and
what functions named ``*cause*``/``*remedy*``/``*hint*``/``*fix*`` return. A flag must be an option of
an ``ocrstack`` subcommand (:func:`ocrstack.cli.subcommands`) or of the other tool the text
tells the user to run, listed below with that tool.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import ocrstack
from ocrstack.cli import subcommands
from ocrstack.core import errors

PACKAGE = Path(ocrstack.__file__).parent
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")

#: Flags of other programs that fix texts name, with the program (guide 4/8 server flags, curl).
OTHER_TOOLS = {
    "--noproxy": "curl (guide 4.4 check)",
    "--trust-request-mm-kwargs": "vllm serve (guide 4, guide 8)",
    "--limit-mm-per-prompt": "vllm serve (guide 8)",
    "--max-model-len": "vllm serve (guide 8)",
    "--served-model-name": "vllm serve (guide 4.1)",
    "--head": "ray start --head",
    "--require-hashes": "pip install (the olmocr scorer's own venv, issue 22)",
    "--no-deps": "pip install (the olmocr scorer's own venv, issue 22)",
}


def _error_names() -> set[str]:
    return {n for n, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.OcrstackError)}


def _strings(node: ast.AST) -> list[str]:
    """String pieces in an expression (constants, f-string literal parts, concatenations)."""
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def remedy_texts() -> list[tuple[str, str]]:
    """(file:line, text) of every fix text in the package."""
    names = _error_names()
    found: list[tuple[str, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(PACKAGE.parent)
        for node in ast.walk(tree):
            parts: list[ast.AST] = []
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name in names:
                    parts += node.args[1:2] + [k.value for k in node.keywords if k.arg == "remedy"]
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "remedy" for t in node.targets
            ):
                parts.append(node.value)
            elif isinstance(node, ast.FunctionDef) and re.search(r"cause|remedy|hint|fix", node.name):
                parts += [
                    r.value for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None
                ]
            for part in parts:
                found += [(f"{where}:{part.lineno}", s) for s in _strings(part)]
    return found


def cli_flags() -> set[str]:
    """Every option string of every ``ocrstack`` (sub)command."""
    return {
        opt
        for parser in subcommands().values()
        for action in parser._actions
        for opt in action.option_strings
    }


def test_the_scan_finds_fix_texts_and_flags() -> None:
    texts = remedy_texts()
    flags = {f for _, t in texts for f in FLAG.findall(t)}
    assert len(texts) > 100
    assert {"--timeout", "--force", "--ready-timeout", "--progress-timeout"} <= flags  # known remedies seen


def test_every_other_tool_flag_is_still_named_somewhere() -> None:
    named = {f for _, t in remedy_texts() for f in FLAG.findall(t)}
    assert set(OTHER_TOOLS) <= named  # no stale allowance that could hide a typo later


def test_every_flag_in_a_fix_text_exists() -> None:
    known = cli_flags()
    missing = sorted(
        {
            (f, where)
            for where, text in remedy_texts()
            for f in FLAG.findall(text)
            if f not in known | set(OTHER_TOOLS)
        }
    )
    assert not missing, f"fix texts name flags that exist nowhere: {missing}"


def test_a_made_up_flag_would_be_caught() -> None:
    assert "--request-timeout" not in cli_flags() | set(OTHER_TOOLS)
    assert FLAG.findall("raise --request-timeout for slow pages; see https://x--y") == ["--request-timeout"]
