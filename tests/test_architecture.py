"""The architecture is enforced (issue 9 item 7): import-linter contracts, the module size limit
and the lint gates (ruff: complexity C901 <= 25, no unused ``# noqa``; issue 20 item 6).

``lint-imports`` reads the contracts in pyproject.toml (``[tool.importlinter]``: layers
cli -> commands -> drivers -> stages -> shared, independent stages, no cycles);
``scripts/check_max_lines.py`` lists every module of tasks/ocrstack over 400 lines. Both run here
on this checkout, and each is shown to fail on a deliberate violation in a temporary copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tasks" / "ocrstack"
MAX_LINES = ROOT / "scripts" / "check_max_lines.py"

pytestmark = pytest.mark.proc


def _lint_imports() -> Path:
    """The ``lint-imports`` of this interpreter's environment (skips when import-linter is absent)."""
    pytest.importorskip("importlinter", reason="import-linter (test extra) is not installed")
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.is_file():
        pytest.skip(f"import-linter is importable but {exe} does not exist")
    return exe


def _run_lint_imports(tasks_dir: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports --no-cache CONFIG`` with ``tasks_dir`` first on the path (the tree analysed)."""
    env = {**os.environ, "PYTHONPATH": str(tasks_dir)}
    return subprocess.run(
        [str(_lint_imports()), "--no-cache", "--no-logo", str(config)],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _copy_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of tasks/ocrstack and pyproject.toml under ``tmp_path``; returns (tasks dir, config)."""
    tasks = tmp_path / "tasks"
    shutil.copytree(PACKAGE, tasks / "ocrstack", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tasks, tmp_path / "pyproject.toml"


def test_import_contracts_hold() -> None:
    cp = _run_lint_imports(ROOT / "tasks", ROOT / "pyproject.toml")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "0 broken" in cp.stdout


def test_import_contracts_catch_a_bad_import(tmp_path: Path) -> None:
    """Each contract fails on its own kind of violation, named in the output (so not by chance)."""
    tasks, config = _copy_tree(tmp_path)
    pkg = tasks / "ocrstack"
    # layers: a shared module importing the command layer
    with (pkg / "core" / "paths.py").open("a", encoding="utf-8") as fh:
        fh.write("\nimport ocrstack.commands  # injected by test_architecture\n")
    # independence: one stage importing another
    (pkg / "fetch" / "injected_cross_stage.py").write_text("import ocrstack.locking.lockfiles\n")
    # acyclic: two sibling modules inside a stage importing each other
    (pkg / "locking" / "injected_a.py").write_text("from ocrstack.locking import injected_b\n")
    (pkg / "locking" / "injected_b.py").write_text("from ocrstack.locking import injected_a\n")
    # exhaustive layers: a new top-level package placed in no layer
    (pkg / "injected_unplaced").mkdir()
    (pkg / "injected_unplaced" / "__init__.py").write_text("")

    cp = _run_lint_imports(tasks, config)
    out = cp.stdout + cp.stderr
    assert cp.returncode != 0, out
    assert "ocrstack.core.paths -> ocrstack.commands" in out, out
    assert "ocrstack.fetch.injected_cross_stage -> ocrstack.locking.lockfiles" in out, out
    assert "No cycles are allowed in ocrstack.locking" in out, out
    assert "ocrstack.injected_unplaced" in out, out


def test_no_module_over_the_line_limit() -> None:
    cp = subprocess.run(
        [sys.executable, str(MAX_LINES)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert cp.stdout.startswith("ok: "), cp.stdout


def test_line_limit_lists_every_long_module(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "at_limit.py").write_text("x = 1\n" * 400)
    (pkg / "over.py").write_text("x = 1\n" * 401)
    (pkg / "sub" / "much_over.py").write_text("x = 1\n" * 900)
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "ignored.py").write_text("x = 1\n" * 900)
    cp = subprocess.run(
        [sys.executable, str(MAX_LINES), str(pkg)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert cp.stdout.splitlines() == [
        "pkg/sub/much_over.py: 900 lines (limit 400)",
        "pkg/over.py: 401 lines (limit 400)",
    ]
    assert "2 of 3 modules over 400 lines" in cp.stderr


def test_line_limit_refuses_a_missing_directory(tmp_path: Path) -> None:
    cp = subprocess.run(
        [sys.executable, str(MAX_LINES), str(tmp_path / "nope")], capture_output=True, text=True, timeout=60
    )
    assert cp.returncode == 2 and "no such directory" in cp.stderr


def _ruff() -> Path:
    """The ``ruff`` of this interpreter's environment (skips when ruff is absent)."""
    exe = Path(sys.executable).parent / "ruff"
    if not exe.is_file():
        pytest.skip(f"ruff (test extra) is not installed beside {sys.executable}")
    return exe


def _ruff_on_checkout(*command: str) -> subprocess.CompletedProcess:
    """``ruff COMMAND --no-cache`` over the checkout's Python (tasks, tests, scripts, noxfile.py)."""
    return subprocess.run(
        [str(_ruff()), *command, "--no-cache", "tasks", "tests", "scripts", "noxfile.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_ruff_gates_hold() -> None:
    """The lint of pyproject.toml ([tool.ruff]) passes on the checkout: style, C901 complexity
    <= 25 (docling uses 30) and no unused ``# noqa`` (RUF100)."""
    cp = _ruff_on_checkout("check")
    assert cp.returncode == 0, cp.stdout + cp.stderr


def test_the_code_is_as_the_formatter_writes_it() -> None:
    """``ruff format --check`` ([tool.ruff] line length) passes: no file drifts from the formatter."""
    cp = _ruff_on_checkout("format", "--check")
    assert cp.returncode == 0, cp.stdout + cp.stderr


def test_ruff_gates_catch_complexity_and_unused_noqa(tmp_path: Path) -> None:
    """A function of complexity 26 and a ``# noqa`` that silences nothing fail the same config."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(25))
    (tmp_path / "bad.py").write_text(
        f"def tangled(x):\n{branches}    return -1\n\n\nVALUE = 1  # noqa: E501\n"
    )
    cp = subprocess.run(
        [str(_ruff()), "check", "--no-cache", "--output-format", "concise", "bad.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = cp.stdout + cp.stderr
    assert cp.returncode == 1, out
    assert "C901 `tangled` is too complex (26 > 25)" in out, out
    assert "RUF100" in out, out
