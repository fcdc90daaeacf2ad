"""Build resources: MAX_JOBS from free memory and cores, and ccache.

MAX_JOBS rule (``max_jobs``): one compile job per :data:`GIB_PER_JOB` GiB of available
memory, at most one per usable core, at least 1.

Why 5 GiB per job:
- guide 8: "大量 ``FAILED: [code=9]``" = compile jobs killed for lack of memory; "147 GB 内存用
  8-32" -> at the top of that range 147/32 = 4.6 GB per job; 5 GiB keeps a margin and
  gives 29 jobs on such a machine, inside the guide's range.
- guide 3.2 uses MAX_JOBS=64 on a 96-core machine ("内存小时调低 MAX_JOBS").
- vLLM's conda-forge feedstock builds with ``MAX_JOBS=5`` on x86_64 because the build is
  "memory-intensive" (shared/docs/PIXI-NOTES.md); 5 GiB/job gives 4 on a 24 GiB host,
  the same order.
An explicit ``--max-jobs`` (or ``MAX_JOBS`` in the environment) always wins.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

GIB = 1024**3
#: GiB of available memory per parallel compile job (see the module docstring for the sources).
GIB_PER_JOB = 5


@dataclass(frozen=True)
class HostResources:
    """What the host offers: ``mem_available`` in bytes (None if unknown), usable ``cpus``."""

    mem_available: int | None
    cpus: int


def _meminfo_available(text: str) -> int | None:
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024  # kB
    return None


def _cgroup_limit(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """cgroup v2 ``memory.max`` minus ``memory.current`` (containers), or None when unlimited/unknown."""
    try:
        limit = (root / "memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int((root / "memory.current").read_text().strip())
        return max(0, int(limit) - used)
    except (OSError, ValueError):
        return None


def probe(meminfo: Path = Path("/proc/meminfo"), cgroup: Path = Path("/sys/fs/cgroup")) -> HostResources:
    """Read available memory (``MemAvailable``, capped by cgroup v2) and usable cores; no processes."""
    try:
        avail = _meminfo_available(meminfo.read_text())
    except OSError:
        avail = None
    limit = _cgroup_limit(cgroup)
    if limit is not None:
        avail = limit if avail is None else min(avail, limit)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return HostResources(avail, cpus)


def max_jobs(res: HostResources, override: int | None = None) -> tuple[int, str]:
    """Return ``(MAX_JOBS, reason)``.

    ``override`` (``--max-jobs``) wins. Otherwise ``min(cpus, floor(GiB available / 5))``,
    at least 1; with unknown memory, ``min(cpus, 5)`` (the feedstock's value).

    Raises:
        ValueError: ``override`` is below 1.
    """
    if override is not None:
        if override < 1:
            raise ValueError("MAX_JOBS must be >= 1")
        return override, "set explicitly"
    if res.mem_available is None:
        return max(1, min(res.cpus, 5)), "memory unknown: min(cores, 5) as the conda-forge feedstock"
    by_mem = int(res.mem_available // (GIB_PER_JOB * GIB))
    jobs = max(1, min(res.cpus, by_mem))
    return jobs, (
        f"min({res.cpus} cores, {res.mem_available / GIB:.1f} GiB available / {GIB_PER_JOB} GiB per job)"
    )


def find_ccache(path: str | None = None) -> str | None:
    """Return the ccache executable on ``path`` (default PATH) or None.

    vLLM's setup.py adds ``-DCMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER=ccache`` by itself when
    ccache is on PATH, so the build only has to put it there and choose CCACHE_DIR.
    """
    return shutil.which("ccache", path=path)
