"""Serve profiles ``mineru-diffusion`` and ``mineru-diffusion-safe`` (issue 14).

The expected argument lists are typed in from opendatalab/MinerU-Diffusion at commit 8d456f1:
``docs/sglang/README.md`` "Recommended launch command" (with the port of
``scripts/run_sglang_server.sh``) and ``scripts/run_sglang_server.sh`` itself with its defaults
(HOST 127.0.0.1, PORT 31002, TP_SIZE 1, DLLM_ALGORITHM LowConfidence, ATTENTION_BACKEND triton,
SAMPLING_BACKEND pytorch). ``<MODEL_PATH>`` is the profile's default model directory.
"""

from __future__ import annotations

import pytest

from ocrstack import cli, versions
from ocrstack.backends import profiles
from ocrstack.gpu import GpuScan
from ocrstack.serving import plan
from ocrstack.serving.options import ServeOptions

MODEL = "./models/MinerU-Diffusion-V1-0320-2.5B"
RECOMMENDED = (
    f"sglang serve --model-path {MODEL} --host 127.0.0.1 --port 31002 --tp-size 1 "
    "--dllm-algorithm LowConfidence --mem-fraction-static 0.72 --cuda-graph-max-bs 160"
)
SAFE = (
    f"sglang serve --model-path {MODEL} --host 127.0.0.1 --port 31002 --tp-size 1 "
    "--dllm-algorithm LowConfidence --disable-cuda-graph "
    "--attention-backend triton --sampling-backend pytorch"
)


@pytest.fixture(scope="module")
def pset() -> profiles.ProfileSet:
    return profiles.load()


@pytest.mark.parametrize(
    ("name", "expected"), [("mineru-diffusion", RECOMMENDED), ("mineru-diffusion-safe", SAFE)]
)
def test_dry_run_prints_the_repositorys_command(capsys, name: str, expected: str) -> None:
    assert cli.main(["serve", "--profile", name, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert expected in out.splitlines(), out


def test_profiles_target_the_fork_build(pset) -> None:
    for name in ("mineru-diffusion", "mineru-diffusion-safe"):
        prof = pset.get(name)
        assert prof.build == "sglang-mineru"
        assert pset.builds[prof.build].engine == "sglang"
    desc = pset.builds["sglang-mineru"].description
    assert str(versions.pin("mineru-diffusion.sglang-fork-commit")) in desc


def test_port_is_the_pinned_repository_default(pset) -> None:
    for name in ("mineru-diffusion", "mineru-diffusion-safe"):
        assert pset.get(name).variables()["port"] == str(versions.pin("mineru-diffusion.port"))


def test_served_name_is_the_model_path_as_sglang_reports_it(pset) -> None:
    """No --served-model-name in the repository's command: SGLang answers to --model-path."""
    prof = pset.get("mineru-diffusion")
    assert prof.served_model() == MODEL
    assert prof.served_model({"model": "/srv/md"}) == "/srv/md"
    assert "--served-model-name" not in prof.argv()


def test_restart_policy_falls_back_to_the_conservative_flag(pset) -> None:
    assert pset.get("mineru-diffusion").enforce_eager_flag == "--disable-cuda-graph"
    assert pset.get("mineru-diffusion-safe").enforce_eager_flag is None  # already without CUDA graphs


def test_sglang_log_phases_are_known(pset) -> None:
    """Log lines in the fork's format (model_runner.py): weight loading and CUDA graph capture."""
    phases = {p.name: p for p in pset.phases}
    cap = phases["SGLang CUDA graph capture"]
    assert cap.start.search(
        "[2026-04-23 10:00:01] Capture cuda graph begin. This can take up to several minutes."
    )
    assert cap.end.search(
        "[2026-04-23 10:01:40] Capture cuda graph end. Time elapsed: 99.12 s. mem usage=1.2 GB."
    )
    load = phases["SGLang weights loading"]
    assert load.start.search("Load weight begin. avail mem=139.10 GB")
    assert load.end.search(
        "Load weight end. type=MinerUDiffusionForConditionalGeneration, dtype=torch.bfloat16"
    )


def test_no_gpu_is_refused_for_sglang(tmp_path) -> None:
    lp = plan.plan(ServeOptions("mineru-diffusion-safe"), gpus=GpuScan(None))  # no nvidia-smi
    assert lp.gpu_required


@pytest.mark.parametrize(
    ("version", "build"),
    [
        ("0.5.9.post2.dev1043+gc7b70ac86", "sglang-mineru"),  # the fork at the pinned commit
        ("0.5.9", None),  # an upstream release: cannot load MinerU-Diffusion (issue 8)
    ],
)
def test_build_detection_needs_the_fork(tmp_path, pset, version: str, build: str | None) -> None:
    from ocrstack.serving.environment import detect_build

    from .test_serve_launcher import fake_venv

    venv = fake_venv(tmp_path / "md-env", "sglang", version, py="3.12")
    found, detail = detect_build(pset.get("mineru-diffusion"), pset, venv, {})
    assert found == build
    assert version in detail


def test_build_detection_without_sglang(tmp_path, pset) -> None:
    from ocrstack.serving.environment import detect_build

    from .test_serve_launcher import fake_venv

    found, detail = detect_build(pset.get("mineru-diffusion"), pset, fake_venv(tmp_path / "e", py="3.12"), {})
    assert found is None and "sglang not installed" in detail
