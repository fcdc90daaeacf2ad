"""Each extra installs alone and the CLI starts with it, in real fresh venvs (issue 24 item 2).

One venv per case (no extra, only ``sdk``, only ``api``), each holding exactly the locked packages
of that case (``uv export --frozen`` of uv.lock, the source of envs/lock/*.txt, with
``--require-hashes``) and the ocrstack wheel built from this checkout (``--no-deps``). In each:
``ocrstack --help``, then one verb: without the sdk extra ``parse`` names the missing extra (exit
9); with it ``parse`` reads a page; with the api extra ``api serve`` starts and serves ``/health``,
``/docs`` and the vendored web assets from the wheel. Downloads from PyPI (marker ``network``) and
takes about a minute with a warm uv cache, several without (``nox -s extras``).
tests/test_extras.py checks the same start-up paths in seconds without venvs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from api.helpers import make_page

pytestmark = [pytest.mark.network, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
SERVE = ["api", "serve", "--port", "0", "--layout", "none", "--recognizer", "openai",
         "--server-url", "http://127.0.0.1:9"]  # fmt: skip
#: the venv's own packages only: no PYTHONPATH (a checkout's tasks/) or outer venv leaks in
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
ASSETS = ["/health", "/docs", "/static/vendor/katex/katex.min.js", "/static/vendor/swagger-ui/swagger-ui.css"]


def _uv() -> str:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        pytest.skip("uv not found (pip install uv)")
    return uv


def _run(*cmd: str | Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    cmd_ = [str(c) for c in cmd]
    return subprocess.run(cmd_, capture_output=True, text=True, timeout=timeout, check=False, env=ENV)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = _run(_uv(), "build", "--wheel", "--out-dir", out, REPO)
    assert built.returncode == 0, built.stderr
    (whl,) = out.glob("ocrstack-*.whl")
    return whl


def _venv(root: Path, extra: str | None, wheel: Path) -> Path:
    """A venv at ``root`` with the locked packages of ``extra`` (None: core only) and the wheel."""
    uv = _uv()
    req = root / "requirements.txt"
    flags = ["--extra", extra] if extra else []
    export = _run(uv, "export", "--project", REPO, "--frozen", "--no-dev", "--no-emit-project",
                  "--format", "requirements-txt", *flags, "-o", req)  # fmt: skip
    assert export.returncode == 0, export.stderr
    venv = root / "venv"
    python = venv / "bin" / "python"
    for step in (
        [uv, "venv", "--python", sys.executable, venv],
        [uv, "pip", "install", "--python", python, "--require-hashes", "-r", req],
        [uv, "pip", "install", "--python", python, "--no-deps", wheel],
    ):
        done = _run(*step)
        assert done.returncode == 0, done.stderr
    return venv / "bin" / "ocrstack"


def _serves(ocrstack: Path, data: Path) -> dict[str, int]:
    """Start ``api serve``, GET :data:`ASSETS` once it prints READY; ``{path: status}``."""
    proc = subprocess.Popen([str(ocrstack), *SERVE, "--data-dir", str(data)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=ENV)  # fmt: skip
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("READY "):
                url = line.split()[1]
                with httpx.Client(base_url=url, trust_env=False, timeout=30) as client:
                    return {path: client.get(path).status_code for path in ASSETS}
        raise AssertionError("".join(seen))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("extra", [None, "sdk", "api"], ids=["none", "sdk", "api"])
def test_each_extra_installs_alone_and_the_cli_starts(extra: str | None, wheel: Path, tmp_path: Path):
    ocrstack = _venv(tmp_path, extra, wheel)
    shown = _run(ocrstack, "--help", timeout=120)
    assert shown.returncode == 0 and "parse" in shown.stdout, shown.stderr
    make_page("Short note", "One page, one heading.").save(tmp_path / "note.png")
    parse = [ocrstack, "parse", tmp_path / "note.png", "-o", tmp_path / "out", "--no-progress"]
    if extra == "sdk":
        ran = _run(*parse, timeout=600)
        assert ran.returncode == 0, ran.stderr
        assert "Short note" in (tmp_path / "out" / "note.md").read_text(encoding="utf-8")
    else:
        ran = _run(*parse, timeout=120)
        assert ran.returncode == 9 and "pip install 'ocrstack[sdk]'" in ran.stderr, ran.stderr
    if extra == "api":
        assert _serves(ocrstack, tmp_path / "data") == dict.fromkeys(ASSETS, 200)
