"""Options of ``ocrstack versions show`` and ``versions check``, each declared once
(:mod:`ocrstack.core.options`); ``--file`` is one declaration for both (:func:`_file`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ocrstack.core import options as opt


def _file() -> Any:
    """``--file``: the versions file (None: ``envs/versions.yaml``,
    :func:`ocrstack.core.paths.versions_file`)."""
    return opt.option(
        None, flags=("--file",), convert=Path, help="versions file (default: envs/versions.yaml)"
    )


@dataclass(frozen=True)
class ShowOptions:
    """Options of ``ocrstack versions show`` (:func:`ocrstack.versions.show`)."""

    file: Path | None = _file()


@dataclass(frozen=True)
class CheckOptions:
    """Options of ``ocrstack versions check`` (:func:`ocrstack.versions.check`): ``env`` is
    required (no default, so ``--env`` is a required flag)."""

    env: str = opt.option(flags=("--env",), help="environment: vllm-build, merged, vllm, tf, sdk, cpu-test")
    file: Path | None = _file()
