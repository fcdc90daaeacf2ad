"""Fixtures for the deploy/ tests: the checkout's deploy folder and a writable copy of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def deploy(repo: Path) -> Path:
    """The checkout's ``deploy/`` folder (read only in tests)."""
    return repo / "deploy"


@pytest.fixture
def deploy_copy(repo: Path, tmp_path: Path) -> Path:
    """A copy of ``deploy/`` beside links to the files its checks read (pixi.toml, COPY sources)."""
    for name in ("pixi.toml", "pyproject.toml", "README.md", "envs", "tasks", "patches"):
        (tmp_path / name).symlink_to(repo / name)
    shutil.copytree(repo / "deploy", tmp_path / "deploy")
    return tmp_path / "deploy"
