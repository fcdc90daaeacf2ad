"""Shared fixtures and the guards that keep unit tests hermetic.

Markers (pyproject.toml) name each external resource. A test that starts a
process must carry ``proc``, ``server``, ``slow``, ``network`` or ``gpu``, and a
test that listens on a port (a fake server in a thread included) ``server`` or ``slow``;
otherwise the autouse guard makes ``subprocess.Popen`` or ``socket.listen``
fail (pattern from cibuildwheel ``unit_test/main_tests/conftest.py``). A test
that needs something absent is skipped with the reason printed (``-ra``).
``network`` tests (engine and CUDA wheels from PyPI) run only when ``-m`` names them
(``.ci/run`` runs them as their own step; ``nox -s engines`` the engine parsers); so do the
``heavy`` measurement suites (the corpus accuracy baseline, the quick bench: ``.ci/run``'s own
step, ``nox -s heavy``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROCESS_MARKERS = {"proc", "server", "slow", "network", "gpu"}
#: Markers that allow listening on a port (a fake server in a thread, uvicorn, Ray).
SERVER_MARKERS = {"server", "slow"}


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


@pytest.fixture(scope="session", autouse=True)
def _page_memo_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One directory per test run, shared by its xdist workers, for the corpus page memo of
    ``support/parse_helpers.py`` (each OCR page read once per run, not once per worker): the
    parent of the workers' basetemps (pytest's own ``pytest-N`` run directory) under xdist,
    the basetemp itself without it."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    path = root / "page-memo"
    path.mkdir(exist_ok=True)
    os.environ["OCRSTACK_TEST_PAGE_MEMO"] = str(path)


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
    """Fail unit tests that start processes or listen on a port without declaring it with a marker."""
    names = {m.name for m in request.node.iter_markers()}
    if not PROCESS_MARKERS & names:

        class _Blocked(subprocess.Popen):  # type: ignore[type-arg]
            def __init__(self, args, *a, **kw):  # mirrors Popen
                marks = sorted(PROCESS_MARKERS)
                raise AssertionError(f"unit test started a process {args!r}; mark it with one of {marks}")

        monkeypatch.setattr(subprocess, "Popen", _Blocked)
    if not SERVER_MARKERS & names:

        def _no_listen(self: socket.socket, *args: object) -> None:
            where, marks = self.getsockname(), sorted(SERVER_MARKERS)
            raise AssertionError(f"unit test listens on {where!r}; mark the test with one of {marks}")

        monkeypatch.setattr(socket.socket, "listen", _no_listen)


#: Markers whose tests run only when the ``-m`` expression names them, with the skip reason.
OPT_IN = {
    "network": "downloads from PyPI: run with -m network (.ci/run runs them as their own step)",
    "hostile": "minutes of hostile-input timings: run with -m hostile (nox -s hostile)",
    "heavy": "a heavy measurement suite: run with -m heavy (.ci/run's own step; nox -s heavy)",
}


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip ``gpu`` tests with the reason when no NVIDIA driver is present, and the :data:`OPT_IN`
    markers' tests unless the ``-m`` expression names the marker (the default run stays offline
    and a fast loop; issue 20)."""
    if item.get_closest_marker("gpu") and shutil.which("nvidia-smi") is None:
        pytest.skip("no NVIDIA GPU here (nvidia-smi not found); run on a GPU host")
    markexpr = item.config.option.markexpr or ""
    for marker, reason in OPT_IN.items():
        if item.get_closest_marker(marker) and marker not in markexpr:
            pytest.skip(reason)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``scripts/test`` runs ``-n auto --dist loadgroup``), the tests that start a
    local Ray run one after another on one worker: each starts Ray with all of the machine's CPUs."""
    for item in items:
        if "tests/scaleout/" in item.nodeid or item.nodeid.startswith("scaleout/"):
            item.add_marker(pytest.mark.xdist_group("ray"))
