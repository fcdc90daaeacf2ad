"""The README is checked, not trusted (issue 24, done-when 3).

- Every command line of its fenced ``bash`` blocks names things that exist: an ``ocrstack`` command
  line is parsed by the real argparse tree (verbs, flags, choices); ``pixi run [-e ENV] TASK``
  names a task of ``pixi.toml`` available in that environment, and its command with the line's
  arguments parses as an ``ocrstack`` command line too; ``nox -s NAME`` is a session of
  ``noxfile.py``; ``bash FILE`` and every repository path on the line exist.
- Every repository path the prose names in backticks exists (at the root or in the package).
- The first command's parse runs on the sample inside the repository (no ``../shared``).

The API section's routes and fields are checked against the OpenAPI schema in
``tests/api/test_readme_api.py``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shlex
from pathlib import Path

import pytest

from ocrstack import cli
from ocrstack.cli import build_parser
from support import manifest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "tasks" / "ocrstack"
README = (REPO / "README.md").read_text(encoding="utf-8")
#: First path components that mean "a file of this repository" on a command line or in prose.
TOP = ("samples", "scripts", "envs", "deploy", "docs", "patches", "tasks", "tests", ".ci", ".github")
#: Command words not ours (shell builtins, other tools); their lines are checked for paths only.
FOREIGN = {"export", "docker", "kubectl", "cd"}


def fenced_blocks(text: str, lang: str = "bash") -> list[str]:
    """The bodies of the fenced code blocks of ``lang``, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def command_lines(block: str) -> list[list[str]]:
    """Each simple command of a block as words (continuations joined, comments dropped, split on
    ``&&``, ``;``, ``|`` and ``&``)."""
    out: list[list[str]] = []
    for line in block.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for word in lexer:
            if word in (";", "&", "&&", "|", "||"):
                out.append(words) if words else None
                words = []
            else:
                words.append(word)
        if words:
            out.append(words)
    return out


def ocrstack_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str | None:
    """None when ``ocrstack ARGV`` parses with the real CLI parser, else argparse's complaint."""
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code:
            return capsys.readouterr().err.strip().splitlines()[-1]
    return None


def nox_sessions() -> set[str]:
    """Session names of noxfile.py (``@nox.session`` functions, ``name=`` when given)."""
    names = set()
    for node in ast.walk(ast.parse((REPO / "noxfile.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if ast.unparse(target) == "nox.session":
                    given = [k.value for k in getattr(deco, "keywords", []) if k.arg == "name"]
                    names.add(given[0].value if given else node.name)
    return names


def pixi_argv(words: list[str], pixi: dict) -> tuple[list[str] | None, str | None]:
    """``pixi run [-e ENV] TASK ARGS... [-- MORE...]`` -> (the ``ocrstack`` argv the task runs,
    None) or (None, what is wrong). Template arguments are filled in order, defaults otherwise."""
    words = words[2:]
    env = None
    if words[:1] == ["-e"]:
        env, words = words[1], words[2:]
    name, rest = words[0], words[1:]
    more = rest[rest.index("--") + 1 :] if "--" in rest else []
    given = rest[: rest.index("--")] if "--" in rest else rest
    found = [(feat, task) for feat, task_name, task in manifest.tasks(pixi) if task_name == name]
    if not found:
        return None, f"no pixi task {name!r}"
    feature, task = found[0]
    env = env or task.get("default-environment", "default")
    envs = manifest.environments(pixi)
    if env not in envs:
        return None, f"no pixi environment {env!r}"
    if feature not in (None, "default") and feature not in envs[env]:
        return None, f"task {name!r} (feature {feature}) is not in environment {env!r}"
    args = [a if isinstance(a, dict) else {"arg": a} for a in task.get("args", [])]
    if len(given) > len(args):
        return None, f"task {name!r} takes {len(args)} argument(s), the line gives {len(given)}"
    values = {a["arg"]: (given[i] if i < len(given) else a.get("default")) for i, a in enumerate(args)}
    if None in values.values():
        return None, f"task {name!r} needs arguments {[a['arg'] for a in args]}"
    cmd = task["cmd"] if isinstance(task["cmd"], str) else shlex.join(task["cmd"])
    cmd = re.sub(r"^\s*cd\s+\S+\s*&&\s*", "", cmd)
    cmd = re.sub(
        r"\{%\s*if (\w+)\s*%\}(.*?)\{%\s*endif\s*%\}", lambda m: m[2] if values.get(m[1]) else "", cmd
    )
    cmd = cmd.replace("{{ pixi.environment.name }}", env)
    cmd = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: shlex.quote(values[m[1]]), cmd)
    argv = shlex.split(cmd) + more
    return (argv[1:], None) if argv[0] == "ocrstack" else (None, f"task {name!r} does not run ocrstack")


def repo_paths(words: list[str]) -> list[str]:
    """The words that name a file or folder of this repository (first component in :data:`TOP`)."""
    return [w for w in words if w.split("/")[0] in TOP and "/" in w]


def line_errors(words: list[str], pixi: dict, sessions: set[str], capsys: pytest.CaptureFixture[str]) -> list:
    """What is wrong with one README command line (empty when nothing is)."""
    errs = [f"{p}: no such file in the repository" for p in repo_paths(words) if not (REPO / p).exists()]
    head = words[0]
    if head == "ocrstack" or head.endswith("/bin/ocrstack"):
        errs.append(ocrstack_error(words[1:], capsys))
    elif words[:2] == ["pixi", "run"]:
        argv, err = pixi_argv(words, pixi)
        errs.append(err or ocrstack_error(argv or [], capsys))
    elif head == "nox":
        name = words[words.index("-s") + 1]
        errs.append(None if name in sessions else f"no nox session {name!r}")
    elif head == "bash":
        errs.append(None if (REPO / words[1]).is_file() else f"{words[1]}: no such script")
    elif head != "pixi" and head not in FOREIGN:
        errs.append(f"unknown command {head!r}: teach tests/test_readme.py to check it")
    return [e for e in errs if e]


def test_every_readme_command_line_names_what_exists(capsys: pytest.CaptureFixture[str]) -> None:
    pixi, sessions = manifest.load(REPO / "pixi.toml"), nox_sessions()
    lines = [words for block in fenced_blocks(README) for words in command_lines(block)]
    assert len(lines) >= 15, "expected the README's command blocks"
    problems = {shlex.join(w): line_errors(w, pixi, sessions, capsys) for w in lines}
    assert not {k: v for k, v in problems.items() if v}


@pytest.mark.parametrize(
    "line",
    [
        "ocrstack parse doc.pdf --no-such-flag",
        "ocrstack no-such-verb",
        "pixi run -e sdk no-such-task",
        "pixi run -e vllm build-vllm a b",
        "nox -s no-such-session",
        "bash scripts/no-such-script",
        "ocrstack parse samples/missing.pdf -o out/",
    ],
)
def test_the_checker_catches_a_wrong_line(line: str, capsys: pytest.CaptureFixture[str]) -> None:
    pixi, sessions = manifest.load(REPO / "pixi.toml"), nox_sessions()
    (words,) = command_lines(line)
    assert line_errors(words, pixi, sessions, capsys)


#: Backticked prose that names a repository path; placeholders (NAME, ENV, ...) are skipped.
PROSE_PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]*)`")
#: Where the prose's relative paths are anchored: the root, the package, parse's stages, k8s.
ROOTS = (REPO, PACKAGE, PACKAGE / "parsing", REPO / "deploy" / "k8s")
#: Paths the README names that are made at run time, or not files of ours.
NOT_OURS = {
    "./models": "fetch-models writes it",
    "./PP-DocLayoutV3_infer": "fetch-layout writes it",
    ".ocrstack/api": "api serve's default --data-dir",
    "build/logs/vllm-build/": "build vllm's log dir",
    "prefix-dev/setup-pixi": "a GitHub action",
    ".nox/": "nox's environments",
    ".venv-dev/bin/nox": "scripts/bootstrap dev installs it",
}
#: Folders of ../shared the README explains (checked there when it is present).
SHARED = ("bench/", "corpus/", "pixi-schema/", "seeds/")


def test_every_path_the_readme_names_exists() -> None:
    named = {m for m in PROSE_PATH.findall(README) if not re.search(r"[A-Z]{3,}|^out/|^/", m)}
    assert len(named) >= 40, sorted(named)
    shared = REPO.parent / "shared"
    missing = [
        p
        for p in sorted(named - set(NOT_OURS))
        if not any((root / p).exists() for root in ROOTS)
        and not (p in SHARED and (not shared.is_dir() or (shared / p).is_dir()))
    ]
    assert not missing, f"README names paths that do not exist: {missing}"


def test_the_sample_is_small_licensed_and_the_one_described() -> None:
    sample = REPO / "samples" / "bzip2-manual.pdf"
    notes = (REPO / "samples" / "README.md").read_text(encoding="utf-8")
    assert sample.stat().st_size < 200_000
    assert hashlib.sha256(sample.read_bytes()).hexdigest() in notes
    assert "Redistribution and use" in (REPO / "samples" / "LICENSE.bzip2").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_first_command_parses_the_sample_in_the_repository(tmp_path, monkeypatch, capsys) -> None:
    """The README's first command as written (its ``-o`` moved under tmp), run from the root."""
    first = command_lines(fenced_blocks(README)[0])
    (argv,) = [w[1:] for w in first if w[0].endswith("/bin/ocrstack")]
    assert argv[0] == "parse" and not any("shared" in w for w in argv)
    out = argv.index("-o") + 1
    argv[out] = str(tmp_path / argv[out])
    monkeypatch.chdir(REPO)
    assert cli.main([*argv, "--no-progress"]) == 0, capsys.readouterr().err
    named = re.search(r"Output: `out/([\w.-]+\.md)` and `out/([\w.-]+\.blocks\.json)`", README)
    assert named, "the README names the first command's outputs"
    md = (Path(argv[out]) / named[1]).read_text(encoding="utf-8")
    for words in ("Burrows-Wheeler", "bunzip2", "DESCRIPTION", "-f"):
        assert words in md
    blocks = json.loads((Path(argv[out]) / named[2]).read_text(encoding="utf-8"))
    assert blocks["complete"] and len(blocks["pages"]) == 2 and blocks["validation"]["ok"]
