"""The server environment a profile runs in: venv, CUDA_HOME and nvcc, the installed build (guide 3, 4).

Read from disk only (directories, installed distributions' metadata); nothing is imported or run.
Used by :mod:`ocrstack.serving.plan`.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ocrstack import versions
from ocrstack.core import proc
from ocrstack.serving.profiles import Profile, ProfileSet


def site_packages(venv: Path) -> Path | None:
    """Return ``venv/lib/pythonX.Y/site-packages`` (first match) or None."""
    found = sorted(venv.glob("lib/python3*/site-packages"))
    return found[0] if found else None


def cuda_home(venv: Path) -> Path:
    """Guide 4: ``$VIRTUAL_ENV/lib/pythonX.Y/site-packages/nvidia/cu<major>`` (major from versions.yaml).

    When the venv does not exist yet, X.Y is versions.yaml ``python.vllm-build``.
    """
    sp = site_packages(venv) or venv / "lib" / f"python{versions.pin('python.vllm-build')}" / "site-packages"
    return sp / "nvidia" / f"cu{versions.pin('torch.cuda_major')}"


def toolchain_nvcc(home: Path) -> Path | None:
    """Return the executable ``nvcc`` that belongs to CUDA_HOME ``home``, or None.

    Looked for at ``$CUDA_HOME/bin/nvcc`` (NVIDIA installer; the pip ``nvidia/cu13`` tree of
    guide 3.2), then, for conda-forge's layout where CUDA_HOME is ``$PREFIX/targets/<triplet>``
    (headers and libs) and the compiler is ``$PREFIX/bin/nvcc``, at ``<home>/../../bin/nvcc``
    (shared/docs/PIXI-NOTES.md; conda-forge cuda-nvcc).
    """
    found = [home / "bin" / "nvcc"]
    if home.parent.name == "targets":
        found.append(home.parent.parent / "bin" / "nvcc")
    return next((c for c in found if c.is_file() and os.access(c, os.X_OK)), None)


# --------------------------------------------------------------------------- builds


def _dist_version(dist: str, sp: Path | None) -> str | None:
    if sp is None:
        return versions.installed(dist)
    for d in md.distributions(path=[str(sp)]):
        if (d.metadata["Name"] or "").lower().replace("_", "-") == dist:
            return d.version
    return None


def detect_build(
    profile: Profile, pset: ProfileSet, venv: Path | None, env: Mapping[str, str]
) -> tuple[str | None, str]:
    """Return ``(build id or None, detail)`` for the server environment a profile would run in.

    vLLM: the installed ``vllm`` version in the venv's site-packages; a version carrying the
    feat-ocr commit (versions.yaml ``vllm.fork-commit``, setuptools-scm local part) is
    ``feat-ocr``, versions.yaml ``upstream.vllm`` is ``upstream``. transformers: the fork
    version (``transformers.fork-version``) or >= 5.21 (first release with ``minicpm_ocr``,
    versions.yaml ``upstream.transformers``). llama.cpp: ``llama-server`` on the PATH. SGLang
    (MinerU-Diffusion, issue 14): an ``sglang`` version carrying the fork commit
    (``mineru-diffusion.sglang-fork-commit``); upstream SGLang cannot load the model.
    Metadata is read from disk; nothing is imported or run.
    """
    engine = pset.builds[profile.build].engine
    sp = site_packages(venv) if venv is not None and venv.is_dir() else None
    where = f"in {sp}" if sp else ("in this interpreter" if venv is None else f"({venv} does not exist)")
    if venv is not None and sp is None and engine in ("vllm", "transformers", "sglang"):
        return None, f"environment {venv} not found"
    if engine == "vllm":
        ver = _dist_version("vllm", sp)
        if ver is None:
            return None, f"vllm not installed {where}"
        commit = str(versions.pin("vllm.fork-commit"))
        if commit[:7] in ver:
            return "feat-ocr", f"vllm {ver} {where}"
        if ver == str(versions.pin("upstream.vllm")):
            return "upstream", f"vllm {ver} {where}"
        return None, f"vllm {ver} {where} is neither the feat-ocr build ({commit}) nor upstream"
    if engine == "transformers":
        ver = _dist_version("transformers", sp)
        if ver is None:
            return None, f"transformers not installed {where}"
        fork = str(versions.pin("transformers.fork-version"))
        try:
            ok = ver == fork or Version(ver) in SpecifierSet(str(versions.pin("upstream.transformers")))
        except InvalidVersion:
            ok = False
        if ok:
            return "transformers", f"transformers {ver} {where}"
        need = f"{fork} or {versions.pin('upstream.transformers')}"
        return None, f"transformers {ver} {where} has no minicpm_ocr (need {need})"
    if engine == "sglang":
        ver = _dist_version("sglang", sp)
        if ver is None:
            return None, f"sglang not installed {where}"
        commit = str(versions.pin("mineru-diffusion.sglang-fork-commit"))
        if commit[:7] in ver:
            return profile.build, f"sglang {ver} {where}"
        return None, f"sglang {ver} {where} is not the MinerU-Diffusion fork ({commit[:9]}; issue 8)"
    if engine == "llama.cpp":
        exe = proc.which(profile.program[0], env)
        return ("llama.cpp", exe) if exe else (None, f"{profile.program[0]} not on PATH")
    return profile.build, f"engine '{engine}' is not checked"


def default_env(profile: Profile) -> Path | None:
    """The server environment when ``--venv`` is not given.

    Order: the guide's directory (``./vllm-ocr-env``, ``./tf-ocr-env``; guide 3) when it
    exists; else the active environment (``$VIRTUAL_ENV``, then ``$CONDA_PREFIX`` as set by
    ``pixi run``); else this interpreter's venv (``sys.prefix`` when it is a venv, e.g.
    ``/path/env/bin/ocrstack`` run without activation); else the guide's directory (absent:
    the plan notes it). None for profiles without an environment (llama.cpp).
    """
    if not profile.venv_default:
        return None
    guide_dir = Path(profile.venv_default)
    if guide_dir.is_dir():
        return guide_dir
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(var):
            return Path(os.environ[var])
    if sys.prefix != sys.base_prefix:
        return Path(sys.prefix)
    return guide_dir
