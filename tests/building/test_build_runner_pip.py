"""The runner on real pip steps of the source-build plan, in a fresh venv (no GPU, no vLLM source needed).

Runs the plan's ``pip-cuda-wheels`` -> ``fix-pip-cuda`` -> ``toolchain-check`` steps exactly as
``ocrstack build vllm`` would (same argv, env, done-checks), then reruns: the wheel step must
be skipped by its done-check (real installed versions), the others rerun harmlessly.
The steps that need the cu130 torch index or the feat-ocr sources cannot run here.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ocrstack.building import plan as bp
from ocrstack.building import runner, stage, steps
from ocrstack.building.options import BuildOptions

pytestmark = [pytest.mark.network, pytest.mark.slow]


def test_pip_toolchain_steps_run_and_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    opts = BuildOptions(
        src=tmp_path / "vllm",
        transformers_src=tmp_path / "tf",
        python=py,
        patches_dir=tmp_path / "none",
        log_dir=tmp_path / "logs",
    )
    # keep the system CUDA (/usr/local/cuda, /usr/local/bin wrappers) out of the steps' way
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    toolchain = stage.resolve_toolchain(opts)
    assert toolchain.kind == "pip"
    full = bp.vllm_plan(opts, toolchain, 2)
    wanted = ("pip-cuda-wheels", "fix-pip-cuda", "toolchain-check")
    part = steps.Plan("pip toolchain part", full.python, tuple(full.step(n) for n in wanted))

    first = runner.run_plan(part, opts.log_dir, out=io.StringIO())
    assert [o.status for o in first] == ["ran", "ran", "ran"]
    check_log = (opts.log_dir / "03-toolchain-check.log").read_text()
    assert "cuda_fp16.h: compiles" in check_log and f"{toolchain.cuda_home}/bin/nvcc" in check_log

    again = runner.run_plan(part, opts.log_dir, out=io.StringIO())
    assert [o.status for o in again] == ["skipped", "ran", "ran"]
    assert "changed: nothing" in (opts.log_dir / "02-fix-pip-cuda.log").read_text()
    summary = json.loads((opts.log_dir / "summary.json").read_text())
    assert summary["steps"][0]["status"] == "skipped"
