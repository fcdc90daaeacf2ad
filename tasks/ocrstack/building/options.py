"""Typed options for ``ocrstack build vllm``, ``vllm-prebuilt`` and ``tf`` (defaults in one place)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.core import paths


def default_patches_dir() -> Path:
    """``patches/`` at the checkout root (see patches/README.md); ``./patches`` outside a checkout."""
    root = paths.repo_root()
    return (root / "patches") if root else Path("patches")


@dataclass(frozen=True)
class BuildOptions:
    """Everything the vLLM source build needs.

    Attributes:
        src: feat-ocr vLLM checkout (guide 2 ``<VLLM_SRC>``, pinned ``vllm.fork-commit``).
        transformers_src: feat-ocr transformers checkout (``<TRANSFORMERS_SRC>``,
            pinned ``transformers.fork-commit``).
        python: interpreter of the environment to build into (default: the running one,
            i.e. the pixi ``vllm-build`` environment).
        deps: an existing vLLM ``.deps`` directory for the offline build (guide 3.2).
        max_jobs: override the computed MAX_JOBS.
        ccache_dir: CCACHE_DIR for the compile step (CI caches it); default: ccache's own.
        log_dir: one log file per step is written here.
        allow_other_commit: build checkouts that are not at the pinned commits (warn only).
        allow_other_python: install into ``python`` even when its version misses the
            ``python.vllm-build`` pin or it holds SDK packages (warn only; see
            :mod:`ocrstack.building.target`).
        cuda_home / cc / cxx: override the detected toolkit and host compilers.
        patches_dir: ``patches/`` with ``vllm/*.patch`` and ``transformers/*.patch``.
        network_check: probe GitHub when ``deps`` is not given (short TCP connect).
        network_timeout: seconds for that probe.
        from_step / to_step: run only this slice of the plan (step names as in ``--dry-run``).
        dry_run: print the plan, run nothing.
    """

    src: Path
    transformers_src: Path
    python: Path = field(default_factory=lambda: Path(sys.executable))
    deps: Path | None = None
    max_jobs: int | None = None
    ccache_dir: Path | None = None
    log_dir: Path = Path("build/logs/vllm-build")
    allow_other_commit: bool = False
    allow_other_python: bool = False
    cuda_home: Path | None = None
    cc: str | None = None
    cxx: str | None = None
    patches_dir: Path = field(default_factory=default_patches_dir)
    network_check: bool = True
    network_timeout: float = 3.0
    from_step: str | None = None
    to_step: str | None = None
    dry_run: bool = False


@dataclass(frozen=True)
class PrebuiltOptions:
    """Options of the prebuilt upstream install (vllm from PyPI, then transformers ``--no-deps``).

    Attributes:
        python: interpreter of the target environment (pixi ``vllm``).
        log_dir: one log file per step.
        allow_other_python: install into ``python`` even when it misses the ``python.vllm``
            pin or holds SDK packages (warn only).
        dry_run: print the plan, run nothing.
    """

    python: Path = field(default_factory=lambda: Path(sys.executable))
    log_dir: Path = Path("build/logs/vllm-prebuilt")
    allow_other_python: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class TfOptions:
    """Options of ``ocrstack build tf``: the feat-ocr transformers with ``[serving]`` (guide 3.3).

    Attributes:
        transformers_src: feat-ocr transformers checkout (``<TRANSFORMERS_SRC>``,
            pinned ``transformers.fork-commit``).
        python: interpreter of the target environment (pixi ``tf``; ``python.tf`` pin).
        log_dir: one log file per step.
        patches_dir: ``patches/``; only ``transformers/*.patch`` are applied.
        allow_other_commit: install a checkout that is not at the pinned commit (warn only).
        allow_other_python: install into ``python`` even when it misses the ``python.tf`` pin
            or holds SDK packages (warn only).
        dry_run: print the plan and run the read-only checks, install nothing.
    """

    transformers_src: Path
    python: Path = field(default_factory=lambda: Path(sys.executable))
    log_dir: Path = Path("build/logs/tf")
    patches_dir: Path = field(default_factory=default_patches_dir)
    allow_other_commit: bool = False
    allow_other_python: bool = False
    dry_run: bool = False
