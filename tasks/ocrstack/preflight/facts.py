"""Gather the facts preflight judges: GPUs, compute apps, free disk, Python environments, toolchain.

Every external command goes through a *runner* ``(argv) -> (returncode, stdout)``;
the default runs it with :func:`ocrstack.core.proc.run`, tests pass a runner that
returns recorded ``nvidia-smi`` outputs, so parsing and judging are the same code.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.core import proc
from ocrstack.core.errors import ConfigError
from ocrstack.gpu import APPS_QUERY, Gpu, GpuApp, parse_apps, scan

Runner = Callable[[Sequence[str]], tuple[int, str]]

#: Environments the guide creates as plain venvs in the working directory (guide 2, 3).
GUIDE_VENVS = {"sdk": "sdk-env", "vllm-build": "vllm-ocr-env", "tf": "tf-ocr-env", "merged": "ocr-env"}
#: The environments with a Python requirement in envs/versions.yaml ``python``.
ENVIRONMENTS = ("vllm-build", "vllm", "merged", "tf", "sdk")

#: Run inside each interpreter: Python version, torch version and the CUDA it was built for,
#: read from torch/version.py without importing torch (fast, no GPU needed).
PROBE = r"""
import importlib.metadata as m, json, re, sys
out = {"python": "%d.%d.%d" % sys.version_info[:3], "torch": None, "torch_cuda": None}
for dist in ("vllm", "transformers"):
    try:
        out[dist] = m.version(dist)
    except Exception:
        out[dist] = None
try:
    d = m.distribution("torch")
    out["torch"] = d.version
    text = open(d.locate_file("torch/version.py"), encoding="utf-8").read()
    hit = re.search(r"^cuda(?:\s*:[^=]*)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    out["torch_cuda"] = hit.group(1) if hit else None
except Exception:
    pass
print(json.dumps(out))
"""


@dataclass(frozen=True)
class PythonEnv:
    """One environment's interpreter: ``python`` version string, torch version and its CUDA (or None)."""

    name: str
    interpreter: str
    python: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None
    error: str | None = None
    vllm: str | None = None
    transformers: str | None = None


@dataclass
class Facts:
    """Everything preflight looked at. ``smi`` is None when nvidia-smi is not installed."""

    smi: str | None = None
    smi_error: str | None = None
    gpus: list[Gpu] = field(default_factory=list)
    apps: list[GpuApp] = field(default_factory=list)
    disk_path: Path = Path(".")
    disk_free_bytes: int | None = None
    envs: list[PythonEnv] = field(default_factory=list)
    missing_envs: list[str] = field(default_factory=list)
    interpreters_on_path: dict[str, str] = field(default_factory=dict)  # {path: "3.13.9"}, only ones that ran
    pixi: str | None = None


def default_runner(argv: Sequence[str]) -> tuple[int, str]:
    """Run ``argv`` (no shell), return (exit code, stdout+stderr); 127 when the program is missing."""
    try:
        done = proc.run(list(argv), capture=True, check=False, echo=False, timeout=60)
    except ConfigError:
        return 127, ""
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]} did not answer within 60 s"
    return done.returncode, (done.stdout or "") + (done.stderr or "")


def gather_gpus(facts: Facts, runner: Runner, which: Callable[[str], str | None]) -> None:
    """Fill ``smi``, ``smi_error``, ``gpus`` (:func:`ocrstack.gpu.scan`) and ``apps`` from nvidia-smi."""
    found = scan(runner, which)
    facts.smi, facts.smi_error, facts.gpus = found.smi, found.error, list(found.gpus)
    if found.smi is None or found.error is not None:
        return
    rc, out = runner(APPS_QUERY)
    if rc == 0:
        facts.apps = parse_apps(out)


def probe_python(name: str, interpreter: str, runner: Runner) -> PythonEnv:
    """Run :data:`PROBE` in ``interpreter`` and return what it reported."""
    rc, out = runner([interpreter, "-c", PROBE])
    if rc != 0:
        return PythonEnv(name, interpreter, error=(out.strip().splitlines() or [f"exit status {rc}"])[-1])
    try:
        data = json.loads(out.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return PythonEnv(name, interpreter, error=f"unexpected output: {out.strip()[:200]}")
    return PythonEnv(
        name,
        interpreter,
        data.get("python"),
        data.get("torch"),
        data.get("torch_cuda"),
        vllm=data.get("vllm"),
        transformers=data.get("transformers"),
    )


def find_environments(root: Path, extra: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Return ``({env: interpreter}, [envs not found])``.

    Looks for pixi envs, then the guide's venvs, then adds ``extra``.
    """
    found: dict[str, str] = {}
    for env in ENVIRONMENTS:
        for cand in (
            root / ".pixi" / "envs" / env / "bin" / "python",
            root / GUIDE_VENVS.get(env, "\0") / "bin" / "python",
        ):
            if cand.is_file():
                found[env] = str(cand)
                break
    found.update(extra)
    return found, [e for e in ENVIRONMENTS if e not in found]


def gather(
    *,
    root: Path,
    disk_path: Path,
    pythons: dict[str, str] | None = None,
    runner: Runner = default_runner,
    which: Callable[[str], str | None] = shutil.which,
    disk_free: Callable[[Path], int] = lambda p: shutil.disk_usage(p).free,
) -> Facts:
    """Collect the facts; never raises for a missing GPU, driver or environment (those become facts).

    Args:
        root: directory holding ``.pixi/envs`` and the guide's venvs (the checkout / working dir).
        disk_path: directory whose filesystem must hold the models and builds (guide 2: ``df -h .``).
        pythons: extra ``{env name: interpreter path}`` to check.
    """
    facts = Facts(disk_path=disk_path)
    gather_gpus(facts, runner, which)
    try:
        facts.disk_free_bytes = disk_free(disk_path)
    except OSError:
        facts.disk_free_bytes = None
    envs, facts.missing_envs = find_environments(root, pythons or {})
    facts.envs = [probe_python(name, interp, runner) for name, interp in envs.items()]
    for exe in ("python3.13", "python3.12", "python3.11", "python3.10", "python3"):
        path = which(exe)
        if not path:
            continue
        # a pyenv shim or a broken link is on PATH but does not run: ask it for its version
        rc, out = runner([path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"])
        lines = out.strip().splitlines()
        if rc == 0 and lines and re.fullmatch(r"\d+\.\d+\.\d+", lines[-1].strip()):
            facts.interpreters_on_path[path] = lines[-1].strip()
    facts.pixi = which("pixi") or (
        str(Path.home() / ".pixi/bin/pixi") if Path.home().joinpath(".pixi/bin/pixi").is_file() else None
    )
    return facts
