"""Tests for ocrstack.preflight, fed with recorded nvidia-smi outputs (tests/data/nvidia_smi/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from ocrstack import versions
from ocrstack.cli import main
from ocrstack.core.errors import CheckFailed
from ocrstack.core.results import Status
from ocrstack.gpu import APPS_QUERY, GPU_QUERY
from ocrstack.preflight import checks, evaluate, gather
from ocrstack.preflight.facts import PROBE, Facts, PythonEnv
from ocrstack.preflight.toolchain import toolchain_checks
from support.nvidia_smi import write_fake

DATA = Path(__file__).resolve().parents[1] / "data" / "nvidia_smi"
GB = 10**9


def recorded(name: str) -> tuple[str, str]:
    return (DATA / f"{name}.gpus.csv").read_text(), (DATA / f"{name}.apps.csv").read_text()


class FakeMachine:
    """A runner + which pair answering like a machine with the recorded nvidia-smi outputs."""

    def __init__(self, smi: str | None, pythons: dict[str, dict] | None = None, smi_rc: int = 0) -> None:
        self.smi = smi
        self.smi_rc = smi_rc
        self.pythons = pythons or {}
        self.calls: list[list[str]] = []

    def which(self, exe: str) -> str | None:
        if exe == "nvidia-smi":
            return "/usr/bin/nvidia-smi" if self.smi is not None or self.smi_rc else None
        return None

    def run(self, argv: Sequence[str]) -> tuple[int, str]:
        argv = list(argv)
        self.calls.append(argv)
        if argv == GPU_QUERY:
            if self.smi_rc:
                return self.smi_rc, (DATA / "no_driver.txt").read_text()
            return 0, recorded(self.smi)[0]
        if argv == APPS_QUERY:
            return 0, recorded(self.smi)[1]
        if argv[1:] == ["-c", PROBE] and argv[0] in self.pythons:
            return 0, json.dumps(self.pythons[argv[0]]) + "\n"
        return 127, ""


def facts_for(machine: FakeMachine, tmp_path: Path, free_gb: float = 70.0, pythons=None) -> Facts:
    return gather(
        root=tmp_path,
        disk_path=tmp_path,
        pythons=pythons,
        runner=machine.run,
        which=machine.which,
        disk_free=lambda p: int(free_gb * GB),
    )


def by_name(report) -> dict:
    return {c.name: c for c in report.checks}


# ---------------------------------------------------------------- judging recorded machines


def test_guide_machine_passes_and_picks_the_idle_gpu(tmp_path: Path) -> None:
    report = evaluate(facts_for(FakeMachine("three_5090"), tmp_path))
    c = by_name(report)
    assert report.ok, report.to_text()
    assert c["driver"].status is Status.PASS and "590.48.01" in c["driver"].detail
    assert c["vram"].status is Status.PASS
    assert c["free-gpu"].status is Status.PASS
    assert "CUDA_VISIBLE_DEVICES=2" in c["free-gpu"].detail  # GPU 0 runs vLLM, GPU 1 has an SDK process
    assert c["disk"].status is Status.PASS


def test_all_gpus_busy_warns_with_least_used(tmp_path: Path) -> None:
    report = evaluate(facts_for(FakeMachine("busy_4090"), tmp_path))
    c = by_name(report)["free-gpu"]
    assert c.status is Status.WARN
    assert "GPU 1" in c.detail and "pid 1877" in c.detail
    assert "Free memory on device" in c.fix
    assert by_name(report)["vram"].status is Status.PASS  # 24564 MiB = 25.8 GB >= 24 GB
    assert report.ok  # a busy GPU warns, it does not fail preflight


def test_driver_535_warns_with_cu126_explanation(tmp_path: Path) -> None:
    c = by_name(evaluate(facts_for(FakeMachine("a100_driver535"), tmp_path)))["driver"]
    assert c.status is Status.WARN
    assert "cu126" in c.fix and str(versions.pin("hardware.driver-min")) in c.fix


def test_driver_470_and_16gb_fail(tmp_path: Path) -> None:
    report = evaluate(facts_for(FakeMachine("t4_driver470"), tmp_path))
    c = by_name(report)
    assert c["driver"].status is Status.FAIL
    assert (
        c["vram"].status is Status.FAIL and "15360" not in c["vram"].detail and "16.1 GB" in c["vram"].detail
    )
    assert c["free-gpu"].status is Status.NOT_RUN
    assert not report.ok


def test_no_driver_loaded_fails_driver(tmp_path: Path) -> None:
    report = evaluate(facts_for(FakeMachine(None, smi_rc=9), tmp_path))
    c = by_name(report)
    assert c["nvidia-smi"].status is Status.FAIL
    assert "couldn't communicate with the NVIDIA driver" in c["nvidia-smi"].detail
    assert c["driver"].status is Status.NOT_RUN and not report.ok


def test_no_gpu_is_not_run_and_not_a_pass(tmp_path: Path) -> None:
    report = evaluate(facts_for(FakeMachine(None), tmp_path))
    c = by_name(report)
    assert c["nvidia-smi"].status is Status.NOT_RUN and "no NVIDIA GPU here" in c["nvidia-smi"].detail
    assert all(c[n].status is Status.NOT_RUN for n in ("driver", "vram", "free-gpu"))
    assert report.failures() == []  # nothing failed: the GPU checks did not run ...
    assert not report.ok  # ... so the preflight did not pass either
    assert [x.name for x in report.incomplete()] == ["nvidia-smi", "driver", "vram", "free-gpu"]
    with pytest.raises(CheckFailed) as err:
        report.raise_if_incomplete()
    assert "could not check nvidia-smi, driver, vram, free-gpu (no NVIDIA GPU here" in str(err.value)
    assert "on the GPU host" in err.value.remedy and "\n" not in str(err.value)
    strict = evaluate(facts_for(FakeMachine(None), tmp_path), require_gpu=True)
    assert not strict.ok and by_name(strict)["nvidia-smi"].status is Status.FAIL


def test_unreadable_disk_path_leaves_preflight_incomplete(tmp_path: Path) -> None:
    facts = gather(
        root=tmp_path,
        disk_path=tmp_path / "missing",
        runner=FakeMachine("three_5090").run,
        which=FakeMachine("three_5090").which,
        disk_free=lambda p: None,
    )
    report = evaluate(facts)
    assert by_name(report)["disk"].status is Status.NOT_RUN and not report.ok
    with pytest.raises(CheckFailed) as err:
        report.raise_if_incomplete()
    assert "could not check disk (cannot stat" in str(err.value) and "--disk-path" in err.value.remedy
    assert "GPU host" not in err.value.remedy


def test_complete_preflight_does_not_raise(tmp_path: Path) -> None:
    report = evaluate(facts_for(FakeMachine("three_5090"), tmp_path))
    assert report.ok and report.incomplete() == []
    report.raise_if_incomplete()  # no raise


def test_disk_threshold(tmp_path: Path) -> None:
    floor = float(versions.pin("hardware.disk-min-gb"))
    assert (
        by_name(evaluate(facts_for(FakeMachine(None), tmp_path, free_gb=floor - 0.5)))["disk"].status
        is Status.FAIL
    )
    assert (
        by_name(evaluate(facts_for(FakeMachine(None), tmp_path, free_gb=floor + 0.5)))["disk"].status
        is Status.PASS
    )


# ---------------------------------------------------------------- environments and torch vs driver


def _pixi_env(root: Path, name: str) -> str:
    py = root / ".pixi" / "envs" / name / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text("")
    return str(py)


def test_cuda13_torch_on_driver_535_fails(tmp_path: Path) -> None:
    py = _pixi_env(tmp_path, "vllm-build")
    machine = FakeMachine(
        "a100_driver535", {py: {"python": "3.13.9", "torch": "2.14.0+cu130", "torch_cuda": "13.0"}}
    )
    report = evaluate(facts_for(machine, tmp_path))
    c = by_name(report)
    assert c["python:vllm-build"].status is Status.PASS
    assert (
        c["torch-cuda:vllm-build"].status is Status.FAIL
        and "needs driver >= 580" in c["torch-cuda:vllm-build"].detail
    )
    assert not report.ok


def test_cuda13_torch_on_driver_590_passes_and_cpu_torch_has_no_requirement(tmp_path: Path) -> None:
    py = _pixi_env(tmp_path, "vllm-build")
    tf = _pixi_env(tmp_path, "tf")
    machine = FakeMachine(
        "three_5090",
        {
            py: {"python": "3.13.9", "torch": "2.14.0+cu130", "torch_cuda": "13.0"},
            tf: {"python": "3.12.3", "torch": "2.14.0+cpu", "torch_cuda": None},
        },
    )
    c = by_name(evaluate(facts_for(machine, tmp_path)))
    assert c["torch-cuda:vllm-build"].status is Status.PASS
    assert c["torch-cuda:tf"].status is Status.PASS and "CPU-only" in c["torch-cuda:tf"].detail


def test_wrong_python_in_env_fails(tmp_path: Path) -> None:
    py = _pixi_env(tmp_path, "vllm-build")
    machine = FakeMachine(None, {py: {"python": "3.10.12", "torch": None, "torch_cuda": None}})
    c = by_name(evaluate(facts_for(machine, tmp_path)))["python:vllm-build"]
    assert c.status is Status.FAIL and c.expected == "==3.13.*"


def test_guide_venv_and_explicit_python_are_found(tmp_path: Path) -> None:
    venv = tmp_path / "sdk-env" / "bin" / "python"
    venv.parent.mkdir(parents=True)
    venv.write_text("")
    machine = FakeMachine(
        None,
        {
            str(venv): {"python": "3.10.12", "torch": None, "torch_cuda": None},
            "/opt/x/python": {"python": "3.13.9", "torch": "2.14.0+cu130", "torch_cuda": "13.0"},
        },
    )
    c = by_name(evaluate(facts_for(machine, tmp_path, pythons={"vllm": "/opt/x/python"})))
    assert c["python:sdk"].status is Status.PASS
    assert c["python:vllm"].status is Status.PASS
    assert c["torch-cuda:vllm"].status is Status.NOT_RUN  # no driver to compare with


def test_missing_env_reports_interpreter_availability(tmp_path: Path) -> None:
    facts = Facts(missing_envs=["vllm-build"], interpreters_on_path={"/usr/bin/python3.13": "3.13.9"})
    assert checks.check_missing_env("vllm-build", facts).status is Status.PASS
    facts = Facts(missing_envs=["vllm-build"], interpreters_on_path={"/usr/bin/python3": "3.10.12"})
    assert checks.check_missing_env("vllm-build", facts).status is Status.WARN
    facts.pixi = "/root/.pixi/bin/pixi"
    assert checks.check_missing_env("vllm-build", facts).status is Status.PASS


def test_torch_cuda_major_from_local_tag() -> None:
    assert checks.torch_cuda_major(PythonEnv("x", "p", "3.13.9", "2.14.0+cu130", None)) == 13
    assert checks.torch_cuda_major(PythonEnv("x", "p", "3.13.9", "2.9.0+cu126", None)) == 12
    assert checks.torch_cuda_major(PythonEnv("x", "p", "3.13.9", "2.14.1", None)) is None


def test_thresholds_come_from_versions_yaml() -> None:
    t = checks.Thresholds.from_pins()
    hw = versions.pin("hardware")
    assert (t.driver_min, t.driver_cu126_min, t.vram_min_gb, t.disk_min_gb) == (
        hw["driver-min"],
        hw["driver-cu126-min"],
        hw["vram-min-gb"],
        hw["disk-min-gb"],
    )


def test_toolchain_not_run_without_nvcc() -> None:
    out = toolchain_checks(env={}, which=lambda exe: None)
    assert len(out) == 1 and out[0].status is Status.NOT_RUN and "nvcc" in out[0].detail


# ---------------------------------------------------------------- CLI


def _fake_machine(monkeypatch: pytest.MonkeyPatch, machine: FakeMachine) -> None:
    import ocrstack.preflight as pf

    real_gather = pf.gather

    def fake_gather(**kw):
        return real_gather(**{**kw, "runner": machine.run, "which": machine.which})

    monkeypatch.setattr(pf, "gather", fake_gather)
    monkeypatch.setattr("ocrstack.preflight.toolchain.toolchain_checks", lambda *a, **k: [])


def test_cli_json_and_exit_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    _fake_machine(monkeypatch, FakeMachine("t4_driver470"))
    rc = main(["preflight", "--json", "--root", str(tmp_path), "--disk-path", str(tmp_path)])
    assert rc == CheckFailed.exit_code
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert {c["name"]: c["status"] for c in data["checks"]}["driver"] == "fail"


def test_cli_passes_on_a_good_gpu_host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    _fake_machine(monkeypatch, FakeMachine("three_5090"))
    assert main(["preflight", "--root", str(tmp_path), "--disk-path", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "0 failed" in out.out and out.err == ""


@pytest.mark.parametrize("as_json", [False, True])
def test_cli_without_gpu_exits_1_after_the_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys, as_json: bool
) -> None:
    """No GPU: the GPU checks are not-run, the report is still printed, and the exit says it did not pass."""
    _fake_machine(monkeypatch, FakeMachine(None))
    argv = ["preflight", "--root", str(tmp_path), "--disk-path", str(tmp_path)] + (
        ["--json"] if as_json else []
    )
    assert main(argv) == CheckFailed.exit_code
    out = capsys.readouterr()
    if as_json:
        data = json.loads(out.out)
        assert data["ok"] is False and data["counts"]["fail"] == 0
        assert {c["name"]: c["status"] for c in data["checks"]}["nvidia-smi"] == "not-run"
    else:
        assert "[not-run] nvidia-smi: no NVIDIA GPU here" in out.out and "0 failed" in out.out
    err = out.err.strip().splitlines()
    assert len(err) == 1, out.err
    assert err[0].startswith("ocrstack: error: preflight incomplete: could not check nvidia-smi, driver")
    assert "fix: run `ocrstack preflight` on the GPU host" in err[0]


@pytest.mark.proc
def test_cli_runs_real_nvidia_smi_binary_on_path(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """End to end through the real subprocess path, with a stand-in nvidia-smi that prints recorded output."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_fake(bin_dir, "three_5090")
    env = {**cli_env, "PATH": f"{bin_dir}{os.pathsep}{cli_env['PATH']}"}
    env.pop("CUDA_HOME", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ocrstack",
            "preflight",
            "--json",
            "--root",
            str(tmp_path),
            "--disk-path",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    data = json.loads(proc.stdout)
    status = {c["name"]: c for c in data["checks"]}
    assert status["driver"]["status"] == "pass"
    assert "CUDA_VISIBLE_DEVICES=2" in status["free-gpu"]["detail"]


@pytest.mark.proc
def test_cli_on_this_machine(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """This machine: with no GPU, preflight says so in the report and exits 1 (incomplete, not passed)."""
    proc = subprocess.run(
        [sys.executable, "-m", "ocrstack", "preflight", "--json", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        env=cli_env,
        check=False,
        timeout=120,
    )
    data = json.loads(proc.stdout)
    smi = next(c for c in data["checks"] if c["name"] == "nvidia-smi")
    if smi["status"] == "not-run":
        assert "no NVIDIA GPU here" in smi["detail"]
        assert data["ok"] is False
        assert "preflight incomplete: could not check nvidia-smi" in proc.stderr
    assert proc.returncode == (0 if data["ok"] else 1), proc.stderr
