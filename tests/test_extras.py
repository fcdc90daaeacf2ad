"""The CLI starts with any subset of the extras (issue 24 item 2), checked in seconds.

``ocrstack --help`` builds every verb's parser, so a verb module that imports an extra's package
at start-up breaks the whole CLI for users who did not install that extra (``pip install
".[sdk]"`` then ``ocrstack --help`` died with ``No module named 'fastapi'``). Here each case runs
the CLI in a subprocess whose import system refuses the packages of the extras that are "not
installed", then runs one verb that needs a missing extra and expects its one-line fix (exit 9),
not a traceback. tests/test_extras_venv.py does the same in real fresh venvs (network, minutes).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.proc]
REPO = Path(__file__).resolve().parents[1]
#: import names of each extra's packages (pyproject [project.optional-dependencies]; test excluded)
EXTRAS = {
    "sdk": ("rapidocr", "rapid_layout", "onnxruntime", "pdfplumber", "openvino"),
    "api": ("fastapi", "starlette", "uvicorn", "python_multipart", "multipart"),
    "ray": ("ray",),
    "tf": ("torch", "torchvision", "transformers", "accelerate"),
    "bench": ("pymupdf", "pymupdf4llm", "markitdown"),  # peers of `nox -s bench` only (issue 21)
}
BLOCKER = """
import importlib.abc, sys
BLOCKED = set(sys.argv[1].split(","))
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
from ocrstack.cli import main
sys.exit(main(sys.argv[2:]))
"""


def run_without(installed: tuple[str, ...], *argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``ocrstack ARGV`` with the packages of every extra not in ``installed`` unimportable."""
    blocked = ",".join(name for extra, names in EXTRAS.items() if extra not in installed for name in names)
    cmd = [sys.executable, "-c", BLOCKER, blocked, *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


def test_extras_table_matches_pyproject():
    tomllib = pytest.importorskip("tomllib", reason="Python < 3.11")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS) == set(extras) - {"test"}


@pytest.mark.parametrize(
    ("installed", "verb", "fix"),
    [
        ((), ["parse", "page.png", "-o", "out", "--no-progress"], "pip install 'ocrstack[sdk]'"),
        (("sdk",), ["api", "serve", "--port", "0"], "pip install 'ocrstack[api]'"),
        (("api",), ["parse", "page.png", "-o", "out", "--no-progress"], "pip install 'ocrstack[sdk]'"),
    ],
    ids=["none", "sdk", "api"],
)
def test_cli_starts_and_names_the_missing_extra(installed, verb, fix, tmp_path: Path):
    from PIL import Image

    Image.new("RGB", (200, 100), "white").save(tmp_path / "page.png")
    shown = run_without(installed, "--help")
    assert shown.returncode == 0 and "parse" in shown.stdout, shown.stderr
    verb = [str(tmp_path / a) if a in ("page.png", "out") else a for a in verb]
    if verb[:2] == ["api", "serve"]:
        verb += ["--data-dir", str(tmp_path / "data")]
    ran = run_without(installed, *verb)
    assert ran.returncode == 9 and fix in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr
