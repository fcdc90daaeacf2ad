"""Find a CUDA toolkit: the pip wheels of a Python environment, or a conda-forge prefix.

pip wheels (guide 3.2): ``nvidia-cuda-nvcc`` & co. install into
``<site-packages>/nvidia/cu<MAJOR>`` (``bin/nvcc``, ``include``, ``lib``).
conda-forge (shared/docs/PIXI-NOTES.md): the real ``nvcc`` is ``$CONDA_PREFIX/bin/nvcc``
and headers/libs live in ``$CONDA_PREFIX/targets/x86_64-linux``, which is what
``CUDA_HOME`` must point at.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path

from ocrstack import versions
from ocrstack.core import proc
from ocrstack.core.errors import ConfigError

_LOCATE = (
    "import importlib.metadata as m, sys\n"
    "try:\n"
    "    d = m.distribution('nvidia-cuda-nvcc')\n"
    "except m.PackageNotFoundError:\n"
    "    sys.exit(3)\n"
    "print(d.locate_file('nvidia/cu' + sys.argv[1]))\n"
)


def cuda_major() -> int:
    """The CUDA major of the whole stack (``torch.cuda_major`` in envs/versions.yaml, guide 9: cu130)."""
    return int(versions.pin("torch.cuda_major"))


def pip_cuda_root(python: str | os.PathLike[str]) -> Path:
    """Return ``<site-packages>/nvidia/cu13`` of interpreter ``python`` (runs it once).

    Raises:
        ConfigError: ``nvidia-cuda-nvcc`` is not installed in that environment, or the
            directory does not exist.
    """
    major = str(cuda_major())
    done = proc.run([os.fspath(python), "-c", _LOCATE, major], capture=True, check=False, echo=False)
    if done.returncode != 0 or not done.stdout.strip():
        pins = versions.pin("pip-cuda-toolchain")
        spec = " ".join(f"{k}=={v}" for k, v in pins.items())
        raise ConfigError(
            f"no pip CUDA toolkit in the environment of {python} (nvidia-cuda-nvcc not installed)",
            f"{python} -m pip install {spec}  (guide 3.2)",
        )
    root = Path(done.stdout.strip())
    if not root.is_dir():
        raise ConfigError(
            f"{root}: nvidia-cuda-nvcc is installed but this directory is missing",
            "reinstall the pip CUDA wheels (guide 3.2)",
        )
    return root


def conda_cuda_home(env: Mapping[str, str] | None = None) -> Path | None:
    """Return ``$CONDA_PREFIX/targets/<arch>-linux`` when it exists (the conda-forge ``CUDA_HOME``)."""
    prefix = (env or os.environ).get("CONDA_PREFIX")
    if not prefix:
        return None
    arch = {"aarch64": "sbsa"}.get(platform.machine(), platform.machine())
    home = Path(prefix) / "targets" / f"{arch}-linux"
    return home if (home / "include").is_dir() else None


def nvcc_for(cuda_home: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """Return the nvcc of ``cuda_home``: ``CUDA_HOME/bin/nvcc``, else (conda) ``$CONDA_PREFIX/bin/nvcc``."""
    direct = cuda_home / "bin" / "nvcc"
    if direct.is_file():
        return direct
    prefix = (env or os.environ).get("CONDA_PREFIX")
    if prefix and Path(prefix, "bin", "nvcc").is_file() and cuda_home.is_relative_to(prefix):
        return Path(prefix, "bin", "nvcc")
    return None
