"""MAX_JOBS from memory and cores (guide 3.2 / 8, conda-forge feedstock MAX_JOBS=5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.building.resources import GIB, GIB_PER_JOB, HostResources, max_jobs, probe


def test_guide_machine_lands_in_the_guides_range() -> None:
    """guide 8: 147 GB of memory works with MAX_JOBS 8-32 (and the guide's host has 96 cores)."""
    jobs, reason = max_jobs(HostResources(147 * GIB, 96))
    assert 8 <= jobs <= 32
    assert "5 GiB per job" in reason


@pytest.mark.parametrize(
    ("gib", "cpus", "want"),
    [
        (24, 2, 2),  # this CI host: cores are the limit
        (24, 16, 4),  # memory is the limit
        (3, 16, 1),  # never below 1
        (1000, 8, 8),  # never above the cores
    ],
)
def test_min_of_memory_and_cores(gib: int, cpus: int, want: int) -> None:
    assert max_jobs(HostResources(gib * GIB, cpus))[0] == want


def test_per_job_figure_is_documented_value() -> None:
    assert GIB_PER_JOB == 5
    assert max_jobs(HostResources(10 * GIB - 1, 64))[0] == 1
    assert max_jobs(HostResources(10 * GIB, 64))[0] == 2


def test_override_and_unknown_memory() -> None:
    assert max_jobs(HostResources(1 * GIB, 1), override=12) == (12, "set explicitly")
    with pytest.raises(ValueError):
        max_jobs(HostResources(1 * GIB, 1), override=0)
    jobs, reason = max_jobs(HostResources(None, 32))
    assert jobs == 5 and "feedstock" in reason


def test_probe_reads_meminfo_and_cgroup(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   20971520 kB\n")
    cg = tmp_path / "cg"
    cg.mkdir()
    assert probe(meminfo, cg).mem_available == 20 * GIB  # no cgroup files: MemAvailable
    (cg / "memory.max").write_text(f"{16 * GIB}\n")
    (cg / "memory.current").write_text(f"{6 * GIB}\n")
    res = probe(meminfo, cg)
    assert res.mem_available == 10 * GIB and res.cpus >= 1
    (cg / "memory.max").write_text("max\n")
    assert probe(meminfo, cg).mem_available == 20 * GIB
