"""Options of ``ocrstack preflight``, each declared once (:mod:`ocrstack.core.options`).

``ocrstack.commands.preflight`` derives its flags from :class:`PreflightOptions` and builds it
from them; Python callers construct it directly with the same defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError


def env_python(item: str) -> tuple[str, str]:
    """Converter for ``--python ENV=PATH``: ``(environment name, interpreter path)``.

    Raises:
        UsageError: no ``=``, or an empty name or path.
    """
    name, sep, path = item.partition("=")
    if not sep or not name or not path:
        raise UsageError(
            f"--python {item!r}: expected ENV=PATH", "e.g. --python vllm=./vllm-ocr-env/bin/python"
        )
    return name, path


@dataclass(frozen=True)
class PreflightOptions:
    """Options of ``ocrstack preflight``.

    Attributes beyond the flags' help: ``root`` is where ``.pixi/envs`` and the guide's venvs
    live; ``disk_path`` defaults to the current directory (guide 2 ``df -h .``); ``pythons`` are
    extra ``(env, interpreter)`` pairs to check (a later pair of the same env wins);
    ``require_gpu`` is for GPU hosts / GPU CI; ``json`` prints JSON instead of text (the shared
    ``--json``, :class:`ocrstack.commands.Output`).
    """

    root: Path = opt.option(
        Path("."), flags=("--root",), convert=Path, help="directory with .pixi/envs or the guide's venvs"
    )
    disk_path: Path = opt.option(
        Path("."), flags=("--disk-path",), convert=Path, help="filesystem to check for free space"
    )
    pythons: tuple[tuple[str, str], ...] = opt.option(
        (),
        flags=("--python",),
        many=True,
        convert=env_python,
        metavar="ENV=PATH",
        help="also check this interpreter (repeatable)",
    )
    require_gpu: bool = opt.option(
        False,
        flags=("--require-gpu",),
        help="report a missing NVIDIA GPU as a failed check, not as not-run (both exit 1)",
    )
    json: bool = False
