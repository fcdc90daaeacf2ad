"""The server environment a profile runs in: venv, CUDA_HOME and nvcc, the installed build (guide 3, 4).

Read from disk only (directories, installed distributions' metadata); nothing is imported or run.
Used by :mod:`ocrstack.serving.plan`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ocrstack import versions
from ocrstack.backends.base import Site
from ocrstack.backends.profiles import Profile, ProfileSet


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


def detect_build(
    profile: Profile, pset: ProfileSet, venv: Path | None, env: Mapping[str, str]
) -> tuple[str | None, str]:
    """Return ``(build id or None, detail)`` for the server environment a profile would run in.

    The profile's back-end (:meth:`ProfileSet.backend`) recognises its build from what is
    installed (its version expectations: :mod:`ocrstack.backends.vllm`, ``sglang``,
    ``transformers``, ``llamacpp``). A back-end that runs from a Python environment needs the
    given ``venv`` to exist. Metadata is read from disk; nothing is imported or run.
    """
    backend = pset.backend(profile)
    sp = site_packages(venv) if venv is not None and venv.is_dir() else None
    where = f"in {sp}" if sp else ("in this interpreter" if venv is None else f"({venv} does not exist)")
    if venv is not None and sp is None and backend.python_env:
        return None, f"environment {venv} not found"
    return backend.detect(Site(profile.build, profile.program[0], sp, where, env))


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
