"""Lock files: ``uv.lock`` (PyPI tooling, solved here) and ``pixi.lock`` (conda-forge, solved where
conda-forge is reachable).

``envs/lock/{sdk,dev}.txt`` are exported from ``uv.lock`` with hashes so that
``scripts/bootstrap`` needs only Python and pip. :func:`export` regenerates them,
:func:`stale` tells whether they still match ``uv.lock``. The conda side is exported
with ``pixi workspace export conda-explicit-spec`` when pixi is installed
(shared/pixi-docs/reference__cli__pixi__workspace__export__conda-explicit-spec.md).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ocrstack.core import options as opt
from ocrstack.core import proc
from ocrstack.core.errors import ConfigError

#: Exported requirement sets: name -> extras of the ocrstack project (pyproject.toml).
EXPORTS: dict[str, tuple[str, ...]] = {
    "sdk": ("sdk", "api", "ray"),
    "dev": ("sdk", "api", "ray", "tf", "test"),
    # dev plus the peers of the born-digital side-by-side table (issue 21): `nox -s bench`
    "bench": ("sdk", "api", "ray", "tf", "test", "bench"),
}


@dataclass(frozen=True)
class LockOptions:
    """Options for ``ocrstack lock export|check``: the checkout root (found by the command, no
    flag) and the conda export dir (``--conda-dir``, declared here once with
    :mod:`ocrstack.core.options`; None: ``envs/lock/conda``)."""

    root: Path
    conda_dir: Path | None = opt.option(
        None, flags=("--conda-dir",), convert=Path, help="where conda explicit specs go"
    )


def _uv() -> str:
    """Return the uv binary: the one shipped with the ``uv`` package of this interpreter, else PATH."""
    try:
        from uv import find_uv_bin  # the PyPI package ships its binary

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return proc.require("uv", hint="pip install uv (it is in the dev environment: scripts/bootstrap dev)")


def _exported(name: str, root: Path) -> str:
    """Return the requirements text (with hashes) of export ``name`` from ``root/uv.lock``."""
    argv = [
        _uv(),
        "export",
        "--frozen",
        "--no-dev",
        "--no-emit-project",
        "--format",
        "requirements-txt",
        "--quiet",
    ]
    for extra in EXPORTS[name]:
        argv += ["--extra", extra]
    return proc.run(argv, cwd=root, capture=True, echo=False).stdout


def export(options: LockOptions) -> list[Path]:
    """Write ``envs/lock/NAME.txt`` for every export from ``uv.lock`` (atomically); return the paths.

    When ``pixi`` is on PATH and ``pixi.lock`` exists, also writes the conda explicit specs
    to ``options.conda_dir`` (default ``envs/lock/conda``); otherwise prints why it did not.

    Raises:
        ConfigError: uv missing or uv.lock missing.
    """
    root = options.root
    if not (root / "uv.lock").is_file():
        raise ConfigError(f"{root / 'uv.lock'} not found", "run `uv lock` in the repository root")
    written = []
    for name in EXPORTS:
        target = root / "envs" / "lock" / f"{name}.txt"
        target.parent.mkdir(parents=True, exist_ok=True)
        text = _exported(name, root)
        with tempfile.NamedTemporaryFile("w", dir=target.parent, suffix=".tmp", delete=False) as tmp:
            tmp.write(text)
        os.replace(tmp.name, target)
        written.append(target)
    pixi = proc.which("pixi")
    if pixi and (root / "pixi.lock").is_file():
        conda_dir = options.conda_dir or root / "envs" / "lock" / "conda"
        conda_dir.mkdir(parents=True, exist_ok=True)
        proc.run([pixi, "workspace", "export", "conda-explicit-spec", str(conda_dir)], cwd=root)
        written.append(conda_dir)
    else:
        why = "pixi is not installed" if not pixi else "pixi.lock does not exist yet (run `pixi lock`)"
        print(f"lock export: conda environments not exported: {why} (https://pixi.sh)")
    return written


def stale(options: LockOptions) -> list[str]:
    """Return the names of ``envs/lock/*.txt`` files that differ from a fresh export of ``uv.lock``."""
    out = []
    for name in EXPORTS:
        committed = options.root / "envs" / "lock" / f"{name}.txt"
        if not committed.is_file() or committed.read_text() != _exported(name, options.root):
            out.append(name)
    return out
