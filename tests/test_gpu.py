"""GPU facts (ocrstack.gpu): nvidia-smi's CSV, the scan preflight and serve share, the freest-GPU pick.

Fed with recorded nvidia-smi outputs (tests/data/nvidia_smi/): in-process through ``scan``'s
runner, and once through a stand-in ``nvidia-smi`` on PATH.
"""

# ruff: noqa: E501 -- recorded nvidia-smi lines kept on one line
from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack import gpu
from ocrstack.gpu import driver_major, parse_apps, parse_gpus
from support.nvidia_smi import DATA, recorded_scan


def recorded(name: str) -> tuple[str, str]:
    return (DATA / f"{name}.gpus.csv").read_text(), (DATA / f"{name}.apps.csv").read_text()


def test_parse_three_gpus_and_apps() -> None:
    gpus = parse_gpus(recorded("three_5090")[0])
    assert [g.index for g in gpus] == [0, 1, 2]
    assert (
        gpus[0].name == "NVIDIA GeForce RTX 5090" and gpus[0].total_mib == 32607 and gpus[0].used_mib == 27845
    )
    assert gpus[2].driver == "590.48.01" and driver_major(gpus[2].driver) == 590
    assert 34.1 < gpus[0].total_gb < 34.2  # 32607 MiB in 10^9-byte GB
    apps = parse_apps(recorded("three_5090")[1])
    assert [(a.pid, a.used_mib) for a in apps] == [(281734, 27830), (291002, 398)]
    assert apps[0].gpu_uuid == gpus[0].uuid


def test_header_only_and_na_values() -> None:
    assert parse_apps(recorded("a100_driver535")[1]) == []
    assert parse_apps("No running processes found\n") == []
    na = "index, uuid, name, memory.total [MiB], memory.used [MiB], driver_version\n0, GPU-x, NVIDIA GB10, [N/A], [N/A], 580.95.05\n"
    g = parse_gpus(na)[0]
    assert g.total_mib is None and g.free_fraction is None
    with pytest.raises(ValueError):
        parse_gpus("name, pci.bus_id\nfoo, 0000:01:00.0\n")


def test_freest_gpu_from_recorded_nvidia_smi() -> None:
    idx, why = gpu.freest(recorded_scan("busy_4090"))  # 23110 vs 18342 MiB used
    assert idx == "1" and "18342" in why
    idx, _ = gpu.freest(recorded_scan("three_5090"))
    used = {}
    for line in (DATA / "three_5090.gpus.csv").read_text().splitlines()[1:]:
        cols = [c.strip() for c in line.split(",")]
        used[cols[0]] = int(cols[4].split()[0])
    assert idx == min(used, key=lambda k: (used[k], int(k)))
    idx, why = gpu.freest(recorded_scan("no_driver"))
    assert idx is None and "couldn't communicate with the NVIDIA driver" in why
    assert gpu.freest(recorded_scan(None)) == (None, "no NVIDIA GPU found (nvidia-smi not on PATH)")


def test_unknown_usage_ranks_last_and_ties_go_to_the_lowest_index() -> None:
    head = "index, uuid, name, memory.total [MiB], memory.used [MiB], driver_version\n"
    rows = "0, GPU-a, A, 100 MiB, [N/A], 580\n1, GPU-b, B, 100 MiB, 5 MiB, 580\n2, GPU-c, C, 100 MiB, 5 MiB, 580\n"
    found = gpu.scan(lambda argv: (0, head + rows), lambda exe: "/usr/bin/nvidia-smi")
    assert gpu.freest(found)[0] == "1"


@pytest.mark.parametrize(
    ("rc", "out", "error", "reason"),
    [
        (9, "", "nvidia-smi exited with status 9", "nvidia-smi failed: no output"),
        (
            0,
            "name, pci.bus_id\nfoo, 0000:01:00.0\n",
            "unexpected nvidia-smi header",
            "nvidia-smi failed: name, pci.bus_id",
        ),
        (
            0,
            "index, uuid, name, memory.total [MiB], memory.used [MiB], driver_version\n",
            None,
            "nvidia-smi listed no GPUs",
        ),
    ],
)
def test_scan_says_why_there_is_no_gpu_list(rc: int, out: str, error: str | None, reason: str) -> None:
    """The scan keeps preflight's error text; the pick says why no GPU was chosen."""
    found = gpu.scan(lambda argv: (rc, out), lambda exe: "/usr/bin/nvidia-smi")
    assert found.gpus == ()
    assert (found.error is None) if error is None else (error in found.error)
    assert gpu.freest(found) == (None, reason)


def test_scan_runs_only_the_gpu_query() -> None:
    calls: list[list[str]] = []
    gpu.scan(
        lambda argv: calls.append(list(argv)) or (0, recorded("busy_4090")[0]), lambda exe: "/x/nvidia-smi"
    )
    assert calls == [gpu.GPU_QUERY]
    assert gpu.scan(lambda argv: pytest.fail("ran without nvidia-smi"), lambda exe: None).smi is None


@pytest.mark.proc
def test_scan_asks_the_nvidia_smi_on_path(fake_nvidia_smi) -> None:
    """The default runner and PATH lookup: a stand-in nvidia-smi prints a recorded answer."""
    script: Path = fake_nvidia_smi("busy_4090")
    found = gpu.scan()
    assert found.smi == str(script) and [g.index for g in found.gpus] == [0, 1]
    assert gpu.freest(found)[0] == "1"
    fake_nvidia_smi("no_driver")
    found = gpu.scan()
    assert found.gpus == () and "couldn't communicate with the NVIDIA driver" in (found.error or "")
