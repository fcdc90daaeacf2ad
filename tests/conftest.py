"""Shared fixtures and the guards that keep unit tests hermetic.

Markers (pyproject.toml) name each external resource. A test that starts a
process must carry ``proc``, ``server``, ``slow``, ``network`` or ``gpu``;
otherwise the autouse guard makes ``subprocess.Popen`` fail (pattern from
cibuildwheel ``unit_test/main_tests/conftest.py``). A test that needs something
absent is skipped with the reason printed (``-ra``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROCESS_MARKERS = {"proc", "server", "slow", "network", "gpu"}


def corpus_path() -> Path:
    """Return the shared corpus directory ($OCRSTACK_CORPUS or ../shared/corpus beside the checkout)."""
    return Path(os.environ.get("OCRSTACK_CORPUS", REPO.parent / "shared" / "corpus"))


def shared_path() -> Path:
    """Return ../shared beside the checkout."""
    return REPO.parent / "shared"


@pytest.fixture(scope="session")
def repo() -> Path:
    """The checkout root."""
    return REPO


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real-document corpus (shared/corpus); skips with the reason when absent."""
    path = corpus_path()
    if not (path / "manifest.json").is_file():
        pytest.skip(f"corpus not found at {path} (set OCRSTACK_CORPUS)")
    return path


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared/ directory (pixi schema, docs, seeds); skips with the reason when absent."""
    path = shared_path()
    if not path.is_dir():
        pytest.skip(f"shared/ not found at {path}")
    return path


@pytest.fixture
def cli_env() -> dict[str, str]:
    """Environment for running the ``ocrstack`` CLI of this interpreter in a subprocess."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture
def fake_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """Install a recorded machine's ``nvidia-smi`` first on PATH: call it with the machine name.

    The names are those of tests/data/nvidia_smi/README.md (``busy_4090``, ``no_driver``, ...);
    see ``support/nvidia_smi.py``. Code under test then runs it, so mark the test ``proc``.
    """
    from support.nvidia_smi import write_fake

    def install(name: str) -> Path:
        script = write_fake(tmp_path / "fake-nvidia-smi", name)
        monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}")
        return script

    return install


@pytest.fixture(autouse=True)
def _guard_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail unit tests that start processes without declaring it with a marker."""
    if PROCESS_MARKERS & {m.name for m in request.node.iter_markers()}:
        return

    class _Blocked(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, args, *a, **kw):  # noqa: ANN001 - mirrors Popen
            raise AssertionError(
                f"unit test started a process {args!r}; mark the test with one of {sorted(PROCESS_MARKERS)}"
            )

    monkeypatch.setattr(subprocess, "Popen", _Blocked)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip ``gpu`` tests with the reason when no NVIDIA driver is present."""
    if item.get_closest_marker("gpu") and shutil.which("nvidia-smi") is None:
        pytest.skip("no NVIDIA GPU here (nvidia-smi not found); run on a GPU host")
