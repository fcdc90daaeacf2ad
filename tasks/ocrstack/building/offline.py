"""Offline vLLM build: the ``*_SRC_DIR`` variables from ``--deps`` and the GitHub preflight.

The variable names and the directories they point at are data
(``tasks/ocrstack/data/vllm_offline_deps.yaml``, copied from guide 3.2). Without
``--deps`` vLLM's CMake clones CUTLASS, flash-attention, ... from GitHub; when GitHub
is unreachable that fails with ``Failed to clone https://github.com/nvidia/cutlass.git``
(guide 8; the vllm issue 13424 class), so the preflight stops early with the list.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ocrstack.core import paths
from ocrstack.core.errors import ConfigError, InputError


@dataclass(frozen=True)
class OfflineSpec:
    """The data file: ``variables`` (name -> path under ``.deps``), ``cmake_args``, probe host/port."""

    variables: dict[str, str]
    cmake_args: str
    probe_host: str
    probe_port: int


@lru_cache(maxsize=2)
def load(path: str | None = None) -> OfflineSpec:
    """Load ``vllm_offline_deps.yaml`` (default: the packaged copy).

    Raises:
        ConfigError: missing file or wrong shape.
    """
    p = Path(path) if path else paths.data_file("vllm_offline_deps.yaml")
    data: Any = paths.read_yaml(p, "the offline-deps data")
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("variables"), dict):
        raise ConfigError(f"{p}: expected 'schema: 1' and a 'variables' mapping", "restore it from git")
    return OfflineSpec(
        {str(k): str(v) for k, v in data["variables"].items()},
        str(data["cmake-args"]),
        str(data["probe-host"]),
        int(data["probe-port"]),
    )


def deps_env(deps: Path, spec: OfflineSpec | None = None) -> dict[str, str]:
    """Return the environment for an offline build from ``deps`` (an existing vLLM ``.deps``).

    Pure: paths are joined, not checked (see :func:`check_deps`). Includes
    ``CMAKE_ARGS=-DCUTLASS_ENABLE_TESTS=OFF`` (guide 8: otherwise googletest is cloned).
    """
    spec = spec or load()
    env = {name: str(deps / rel) for name, rel in spec.variables.items()}
    env["CMAKE_ARGS"] = spec.cmake_args
    return env


def check_deps(deps: Path, spec: OfflineSpec | None = None) -> list[str]:
    """Return one problem line per variable whose directory is missing (empty list = all present).

    The TRITON_KERNELS level mistake (guide 8, MLIR error) gets its own message.
    """
    spec = spec or load()
    if not deps.is_dir():
        return [f"--deps {deps}: not a directory (want an existing vLLM checkout's .deps)"]
    problems = []
    for name, rel in spec.variables.items():
        d = deps / rel
        if d.is_dir():
            continue
        msg = f"{name}: {d} does not exist"
        if name == "TRITON_KERNELS_SRC_DIR" and (deps / rel.split("/")[0]).is_dir():
            msg += " (it must be the inner python/triton_kernels/triton_kernels level; guide 8: MLIR error)"
        problems.append(msg)
    return problems


def require_deps(deps: Path, spec: OfflineSpec | None = None) -> None:
    """Raise :class:`InputError` listing every missing ``--deps`` directory."""
    problems = check_deps(deps, spec)
    if problems:
        raise InputError(
            f"offline build: {len(problems)} dependency director{'y' if len(problems) == 1 else 'ies'} "
            f"missing: {'; '.join(problems)}",
            "point --deps at the .deps of a vLLM checkout built once with network access (guide 3.2)",
        )


def reachable(host: str, port: int, timeout: float) -> bool:
    """True when a TCP connection to ``host:port`` opens within ``timeout`` seconds (DNS included)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def preflight_network(
    timeout: float, spec: OfflineSpec | None = None, probe: Callable[[str, int, float], bool] | None = None
) -> None:
    """Without ``--deps``: stop early when GitHub cannot be reached.

    ``probe`` defaults to :func:`reachable`, looked up at call time (tests replace it).

    Raises:
        ConfigError: unreachable; the message lists every variable to set (guide 3.2).
    """
    spec = spec or load()
    if (probe or reachable)(spec.probe_host, spec.probe_port, timeout):
        return
    names = ", ".join([*spec.variables, "CMAKE_ARGS"])
    raise ConfigError(
        f"{spec.probe_host}:{spec.probe_port} is not reachable (checked for {timeout:g} s), so vLLM's CMake "
        f"cannot clone its dependencies (guide 8: 'Failed to clone https://github.com/nvidia/cutlass.git'); "
        f"an offline build sets {names}",
        "rerun with --deps <existing vLLM checkout>/.deps (ocrstack sets all of them), "
        "or --no-network-check to try anyway",
    )
