"""Options of ``ocrstack build vllm``, ``vllm-prebuilt``, ``tf`` and ``mineru-diffusion``, each declared once.

Every field is an option of :mod:`ocrstack.core.options` (flag, default, conversion, help), so
``ocrstack.commands.build`` derives its flags and builds these objects from them without copying
a field by hand; Python callers construct them directly with the same defaults.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ocrstack.core import options as opt
from ocrstack.core import paths

#: Help of ``--allow-other-python`` (every build target has it).
OTHER_PYTHON = (
    "install into --python even if its version misses the envs/versions.yaml pin "
    "or it holds SDK packages (warning only)"
)
#: Help of ``--dry-run``, and of ``--log-dir``.
DRY_RUN = "print the ordered plan and run nothing"
LOG_DIR = "one log file per step here"


def default_patches_dir() -> Path:
    """``patches/`` at the checkout root (see patches/README.md); ``./patches`` outside a checkout."""
    root = paths.repo_root()
    return (root / "patches") if root else Path("patches")


def resolved(value: str) -> Path:
    """Converter: the path with symlinks resolved, absolute (a checkout or cache directory)."""
    return Path(value).resolve()


def this_python() -> Path:
    """The running interpreter (the default target environment)."""
    return Path(sys.executable)


@dataclass(frozen=True)
class BuildOptions:
    """Everything the vLLM source build needs (guide 3.2).

    ``src`` and ``transformers_src`` are the feat-ocr checkouts (pinned ``vllm.fork-commit`` and
    ``transformers.fork-commit``); ``python`` is the environment to build into (default: the
    running one, i.e. the pixi ``vllm-build`` environment); ``deps`` an existing vLLM ``.deps``
    directory for the offline build; ``allow_other_python`` is checked by
    :mod:`ocrstack.building.target`; ``from_step``/``to_step`` run only a slice of the plan (step
    names as in ``--dry-run``); ``network_check`` probes GitHub (short TCP connect) when ``deps``
    is not given.
    """

    src: Path = opt.option(flags=("--src",), convert=resolved, help="feat-ocr vLLM checkout (<VLLM_SRC>)")
    transformers_src: Path = opt.option(
        flags=("--transformers-src",),
        convert=resolved,
        help="feat-ocr transformers checkout (<TRANSFORMERS_SRC>)",
    )
    python: Path = opt.option(
        default_factory=this_python,
        flags=("--python",),
        convert=Path,
        help="interpreter of the environment to build into (default: this one)",
    )
    deps: Path | None = opt.option(
        None,
        flags=("--deps",),
        convert=resolved,
        help="existing vLLM .deps directory for an offline build (sets the *_SRC_DIR variables)",
    )
    max_jobs: int | None = opt.option(
        None,
        flags=("--max-jobs",),
        convert=int,
        minimum=1,
        example="8",
        help="override MAX_JOBS (default: from memory and cores)",
    )
    ccache_dir: Path | None = opt.option(
        None, flags=("--ccache-dir",), convert=resolved, help="CCACHE_DIR for the compile (CI cache)"
    )
    log_dir: Path = opt.option(
        Path("build/logs/vllm-build"), flags=("--log-dir",), convert=Path, help=LOG_DIR
    )
    allow_other_commit: bool = opt.option(
        False,
        flags=("--allow-other-commit",),
        help="build checkouts that are not at the pinned commits (warning only)",
    )
    allow_other_python: bool = opt.option(False, flags=("--allow-other-python",), help=OTHER_PYTHON)
    cuda_home: Path | None = opt.option(
        None, flags=("--cuda-home",), convert=Path, help="CUDA toolkit root (default: detected)"
    )
    cc: str | None = opt.option(None, flags=("--cc",), help="host C compiler (default: $CC, gcc-13, gcc)")
    cxx: str | None = opt.option(
        None, flags=("--cxx",), help="host C++ compiler (default: $CXX, g++-13, g++)"
    )
    patches_dir: Path = opt.option(
        default_factory=default_patches_dir,
        flags=("--patches-dir",),
        convert=Path,
        help="patches directory (default: patches/)",
    )
    network_check: bool = opt.option(
        True,
        flags=("--no-network-check",),
        help="skip the GitHub reachability preflight when --deps is not given",
    )
    network_timeout: float = opt.option(
        3.0, flags=("--network-timeout",), convert=float, help="seconds for the GitHub probe"
    )
    from_step: str | None = opt.option(
        None,
        flags=("--from",),
        metavar="STEP",
        help="start at this step (names as in --dry-run), e.g. transformers-fork",
    )
    to_step: str | None = opt.option(
        None, flags=("--to",), metavar="STEP", help="stop after this step, e.g. compile-vllm"
    )
    dry_run: bool = opt.option(False, flags=("--dry-run",), help=DRY_RUN)


@dataclass(frozen=True)
class PrebuiltOptions:
    """Options of the prebuilt upstream install (vllm from PyPI, then transformers ``--no-deps``);
    ``python`` is the target environment (pixi ``vllm``, pin ``python.vllm``)."""

    python: Path = opt.option(
        default_factory=this_python, flags=("--python",), convert=Path, help="target interpreter"
    )
    log_dir: Path = opt.option(
        Path("build/logs/vllm-prebuilt"), flags=("--log-dir",), convert=Path, help=LOG_DIR
    )
    allow_other_python: bool = opt.option(False, flags=("--allow-other-python",), help=OTHER_PYTHON)
    dry_run: bool = opt.option(False, flags=("--dry-run",), help=DRY_RUN)


@dataclass(frozen=True)
class TfOptions:
    """Options of ``ocrstack build tf``: the feat-ocr transformers with ``[serving]`` (guide 3.3);
    ``python`` is the target environment (pixi ``tf``, pin ``python.tf``); ``--dry-run`` also runs
    the read-only checks."""

    transformers_src: Path = opt.option(
        flags=("--transformers-src",),
        convert=resolved,
        help="feat-ocr transformers checkout (<TRANSFORMERS_SRC>)",
    )
    python: Path = opt.option(
        default_factory=this_python,
        flags=("--python",),
        convert=Path,
        help="interpreter of the tf environment (default: this one)",
    )
    log_dir: Path = opt.option(Path("build/logs/tf"), flags=("--log-dir",), convert=Path, help=LOG_DIR)
    patches_dir: Path = opt.option(
        default_factory=default_patches_dir,
        flags=("--patches-dir",),
        convert=Path,
        help="patches directory (default: patches/; transformers/ only)",
    )
    allow_other_commit: bool = opt.option(
        False,
        flags=("--allow-other-commit",),
        help="install a checkout that is not at the pinned commit (warning only)",
    )
    allow_other_python: bool = opt.option(False, flags=("--allow-other-python",), help=OTHER_PYTHON)
    dry_run: bool = opt.option(False, flags=("--dry-run",), help=DRY_RUN)


@dataclass(frozen=True)
class MineruOptions:
    """Options of ``ocrstack build mineru-diffusion``, each declared once (flag, default, help).

    Attributes:
        sglang_src: checkout of ``mineru-diffusion.sglang-fork`` (root with ``python/``).
        python: interpreter of the target environment (pixi ``mineru-diffusion``; pin
            ``python.mineru-diffusion``).
        log_dir: one log file per step.
        allow_other_commit: install a checkout that is not at the pinned commit (warning only).
        allow_other_python: install into ``python`` even when it misses the pin (warning only).
        dry_run: print the plan and run the read-only checks; install nothing.
    """

    sglang_src: Path = opt.option(
        flags=("--sglang-src",), convert=resolved, help="checkout of the pinned SGLang fork"
    )
    python: Path = opt.option(
        default_factory=this_python, flags=("--python",), convert=Path, help="target interpreter"
    )
    log_dir: Path = opt.option(
        Path("build/logs/mineru-diffusion"), flags=("--log-dir",), convert=Path, help=LOG_DIR
    )
    allow_other_commit: bool = opt.option(
        False, flags=("--allow-other-commit",), help="checkout not at the pin: warn only"
    )
    allow_other_python: bool = opt.option(False, flags=("--allow-other-python",), help=OTHER_PYTHON)
    dry_run: bool = opt.option(False, flags=("--dry-run",), help=DRY_RUN)
