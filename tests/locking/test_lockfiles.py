"""The committed lock exports match uv.lock, and drift is detected (issue 2, item 5)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ocrstack.locking import lockfiles


@pytest.mark.proc
def test_committed_exports_match_uv_lock(repo: Path) -> None:
    assert lockfiles.stale(lockfiles.LockOptions(root=repo)) == []


@pytest.mark.proc
def test_drift_is_detected_and_export_repairs_it(repo: Path, tmp_path: Path) -> None:
    for name in ("uv.lock", "pyproject.toml", "README.md"):
        shutil.copy(repo / name, tmp_path / name)
    shutil.copytree(repo / "envs", tmp_path / "envs")
    (tmp_path / "envs" / "lock" / "sdk.txt").write_text("pillow==1.0\n")
    opts = lockfiles.LockOptions(root=tmp_path)
    assert lockfiles.stale(opts) == ["sdk"]
    lockfiles.export(opts)
    assert lockfiles.stale(opts) == []


def test_exports_cover_the_bootstrap_sets(repo: Path) -> None:
    """scripts/bootstrap takes sdk and dev; each must exist, be hashed, and pin the CPU test stack."""
    for name in lockfiles.EXPORTS:
        text = (repo / "envs" / "lock" / f"{name}.txt").read_text()
        assert "--hash=sha256:" in text
    dev = (repo / "envs" / "lock" / "dev.txt").read_text()
    assert "torch==2.14.1" in dev and "transformers==5.23.0" in dev
    assert "torch==" not in (repo / "envs" / "lock" / "sdk.txt").read_text()  # guide 1: sdk has no torch


def test_noxfile_sessions_have_docstrings(repo: Path) -> None:
    import ast

    tree = ast.parse((repo / "noxfile.py").read_text())
    sessions = [f for f in tree.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")]
    assert {"tests", "lint", "lock_export"} <= {f.name for f in sessions}
    for f in sessions:
        doc = ast.get_docstring(f)
        assert doc and "\n" not in doc.strip(), f"session {f.name} needs a one-line docstring"


@pytest.mark.proc
def test_bootstrap_refuses_a_python_older_than_3_10_before_making_a_venv(repo: Path, tmp_path: Path) -> None:
    """Guide 2: Python >= 3.10. An older ``$PYTHON`` gets one line with the fix and exit 2."""
    import subprocess

    old = tmp_path / "python3.9"
    old.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'Python 3.9.18'\nexit 1\n")
    old.chmod(0o755)
    copy = tmp_path / "repo"
    (copy / "scripts").mkdir(parents=True)
    (copy / "envs" / "lock").mkdir(parents=True)
    shutil.copy(repo / "scripts" / "bootstrap", copy / "scripts" / "bootstrap")
    shutil.copy(repo / "envs" / "lock" / "sdk.txt", copy / "envs" / "lock" / "sdk.txt")
    shutil.copy(repo / "pyproject.toml", copy / "pyproject.toml")
    run = subprocess.run(
        ["bash", str(copy / "scripts" / "bootstrap"), "sdk"],
        env={"PATH": "/usr/bin:/bin", "PYTHON": str(old)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2, run.stderr
    assert "is not Python >= 3.10 (Python 3.9.18); fix: PYTHON=" in run.stderr
    assert not (copy / ".venv-sdk").exists()
