"""Parse ``nvidia-smi --query-* --format=csv`` output.

``nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,driver_version --format=csv``
prints a header with units and one row per GPU::

    index, uuid, name, memory.total [MiB], memory.used [MiB], driver_version
    0, GPU-6f1c..., NVIDIA GeForce RTX 5090, 32607 MiB, 27845 MiB, 590.48.01

``--query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv`` prints the
same kind of table (header only when no process runs). Values may be ``[N/A]``
(e.g. unified-memory GPUs); those become None.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

GPU_FIELDS = ("index", "uuid", "name", "memory.total", "memory.used", "driver_version")
APP_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")
GPU_QUERY = ["nvidia-smi", f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv"]
APPS_QUERY = ["nvidia-smi", f"--query-compute-apps={','.join(APP_FIELDS)}", "--format=csv"]
MIB = 1024 * 1024


@dataclass(frozen=True)
class Gpu:
    """One GPU: ``total_mib``/``used_mib`` in MiB (None when nvidia-smi says [N/A])."""

    index: int
    uuid: str
    name: str
    total_mib: int | None
    used_mib: int | None
    driver: str

    @property
    def total_gb(self) -> float | None:
        """Total memory in GB (10^9 bytes), the unit of guide 2's "24 GB"."""
        return None if self.total_mib is None else self.total_mib * MIB / 1e9

    @property
    def free_fraction(self) -> float | None:
        """Share of memory not in use (0..1), None when unknown."""
        if not self.total_mib or self.used_mib is None:
            return None
        return max(0.0, 1.0 - self.used_mib / self.total_mib)


@dataclass(frozen=True)
class GpuApp:
    """One compute process on a GPU (``used_mib`` in MiB)."""

    gpu_uuid: str
    pid: int
    name: str
    used_mib: int | None


def _rows(text: str) -> list[dict[str, str]]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    reader = csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True)
    header = [re.sub(r"\s*\[.*?\]\s*$", "", h.strip()) for h in next(reader)]
    return [dict(zip(header, (c.strip() for c in row), strict=False)) for row in reader if row]


def _mib(value: str | None) -> int | None:
    if value is None:
        return None
    m = re.fullmatch(r"(\d+)(?:\s*MiB)?", value.strip())
    return int(m.group(1)) if m else None


def parse_gpus(text: str) -> list[Gpu]:
    """Parse the ``--query-gpu`` CSV (with header) into :class:`Gpu` objects.

    Raises:
        ValueError: the header lacks a required field (not nvidia-smi's query output).
    """
    rows = _rows(text)
    if rows and not set(GPU_FIELDS) <= set(rows[0]):
        raise ValueError(f"unexpected nvidia-smi header: {sorted(rows[0])}")
    return [
        Gpu(
            index=int(r["index"]),
            uuid=r["uuid"],
            name=r["name"],
            total_mib=_mib(r["memory.total"]),
            used_mib=_mib(r["memory.used"]),
            driver=r["driver_version"],
        )
        for r in rows
    ]


def parse_apps(text: str) -> list[GpuApp]:
    """Parse the ``--query-compute-apps`` CSV; a header-only or "No running processes" output is []."""
    if "No running processes" in text:
        return []
    out = []
    for r in _rows(text):
        if not r.get("pid", "").isdigit():
            continue
        out.append(
            GpuApp(
                r.get("gpu_uuid", ""), int(r["pid"]), r.get("process_name", ""), _mib(r.get("used_memory"))
            )
        )
    return out


def driver_major(version: str) -> int | None:
    """``"590.48.01" -> 590``; None when unparsable."""
    m = re.match(r"(\d+)", version.strip())
    return int(m.group(1)) if m else None
