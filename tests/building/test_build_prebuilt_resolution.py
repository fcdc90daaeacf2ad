"""The prebuilt upstream pin set resolves against PyPI, and the transformers override is its only conflict.

Dry-run resolution with ``uv pip compile`` (no install) for the vLLM environment's Python
(``python.vllm`` in envs/versions.yaml) on x86_64 Linux:

1. ``vllm==upstream.vllm`` alone resolves, to a transformers inside vLLM's own pin
   (``upstream.vllm-transformers-pin``) and outside ``upstream.transformers``;
2. adding ``transformers upstream.transformers`` as a normal requirement fails, naming transformers;
3. the same with transformers as an *override* (what ``pip install --no-deps`` does after
   vLLM) resolves: overriding transformers alone removes every conflict.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from ocrstack import versions

pytestmark = [pytest.mark.network, pytest.mark.slow]


def uv() -> str:
    found = shutil.which(
        "uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if not found:
        pytest.skip("uv not found (pip install uv); needed for a fast dry-run resolution")
    return found


def compile_(
    tmp: Path, reqs: list[str], overrides: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    req = tmp / "requirements.in"
    req.write_text("\n".join(reqs) + "\n")
    argv = [
        uv(),
        "pip",
        "compile",
        str(req),
        "--python-version",
        str(versions.pin("python.vllm")),
        "--python-platform",
        "x86_64-manylinux_2_28",
        "--no-header",
        "--no-annotate",
        "--quiet",
    ]
    if overrides:
        ov = tmp / "overrides.txt"
        ov.write_text("\n".join(overrides) + "\n")
        argv += ["--override", str(ov)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp)


def pinned(out: str) -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+)$", out, flags=re.M))


def test_upstream_pins_resolve_with_only_the_transformers_override(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``upstream.transformers`` has no upper bound (envs/versions.yaml), so what it resolves to
    moves with PyPI: the resolved versions are recorded (JUnit XML property and stdout)."""
    up = versions.pin("upstream")
    vllm_req = f"vllm=={up['vllm']}"
    tf_req = f"transformers{up['transformers']}"

    alone = compile_(tmp_path, [vllm_req])
    assert alone.returncode == 0, alone.stderr
    got = pinned(alone.stdout)
    assert got["vllm"] == up["vllm"]
    assert got["transformers"] in SpecifierSet(up["vllm-transformers-pin"])
    assert got["transformers"] not in SpecifierSet(up["transformers"])  # hence the override
    # upstream vLLM brings the guide's torch (guide 9: torch 2.14.0)
    assert got["torch"] == versions.pin("torch.torch")

    both = compile_(tmp_path, [vllm_req, tf_req])
    assert both.returncode != 0, "the override is not needed any more: drop it from the prebuilt plan"
    assert "transformers" in both.stderr and "unsatisfiable" in both.stderr, both.stderr

    overridden = compile_(tmp_path, [vllm_req], overrides=[tf_req])
    assert overridden.returncode == 0, overridden.stderr
    fixed = pinned(overridden.stdout)
    for name in ("vllm", "torch", "transformers"):
        request.node.user_properties.append((f"resolved-{name}", fixed.get(name)))  # JUnit <property>
    request.node.user_properties.append(("resolved-transformers-without-override", got.get("transformers")))
    print(
        f"prebuilt resolution (python {versions.pin('python.vllm')}): vllm {fixed.get('vllm')}, "
        f"torch {fixed.get('torch')}, transformers {fixed.get('transformers')} "
        f"(override {up['transformers']}; without it {got.get('transformers')})"
    )
    assert fixed["vllm"] == up["vllm"]
    assert fixed["transformers"] in SpecifierSet(up["transformers"])
    assert fixed["torch"] == got["torch"]  # nothing else had to move for torch
