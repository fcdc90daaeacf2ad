"""Launch planning (serving.plan, serving.environment): environment (guide 4), GPU choice, build
detection/mismatch, dry-run; the port check and stop (serving.process)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ocrstack import cli, versions
from ocrstack.core.errors import ConfigError
from ocrstack.serving import environment, process
from ocrstack.serving import plan as plan_mod
from ocrstack.serving.options import ServeOptions
from support.nvidia_smi import recorded_scan

FORK = str(versions.pin("vllm.fork-commit"))  # setuptools-scm puts the commit in the local version
TF_OK = str(versions.pin("cpu-test.transformers"))  # a release with minicpm_ocr
# "0.9.0" / "4.57.1" below are deliberately unsupported versions, not pins


def fake_venv(root: Path, dist: str | None = None, version: str | None = None, py: str = "3.13") -> Path:
    """A venv-shaped directory with one installed distribution's metadata (no real packages)."""
    sp = root / "lib" / f"python{py}" / "site-packages"
    sp.mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "bin" / "python").write_text("#!/bin/sh\n")
    (root / "bin" / "python").chmod(0o755)
    if dist:
        info = sp / f"{dist}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    return root


def plan(profile: str, machine: str | None = None, **kw):
    """The plan on a recorded machine (tests/data/nvidia_smi; default: a host without nvidia-smi)."""
    return plan_mod.plan(ServeOptions(profile, **kw), gpus=recorded_scan(machine))


def test_vllm_env_sets_cuda_home_path_and_gpu(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path / "vllm-ocr-env", "vllm", f"0.11.1.dev42+g{FORK[:9]}.cu130")
    lp = plan("dspark", "busy_4090", venv=venv)
    cu = venv / "lib" / "python3.13" / "site-packages" / "nvidia" / f"cu{versions.pin('torch.cuda_major')}"
    assert lp.env["CUDA_HOME"] == str(cu)  # guide 4: otherwise "Could not find nvcc"
    assert lp.env["PATH"].split(":")[:2] == [str(venv / "bin"), str(cu / "bin")]
    assert lp.env["CUDA_VISIBLE_DEVICES"] == "1"
    assert lp.argv[0] == str(venv / "bin" / "python") and lp.argv[1:3] == [
        "-m",
        "vllm.entrypoints.openai.api_server",
    ]
    assert lp.build == "feat-ocr"
    plan_mod.check_build(lp)
    assert plan("dspark", venv=venv, gpu="3").env["CUDA_VISIBLE_DEVICES"] == "3"


def test_upstream_build_is_refused_with_the_twin_named(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path / "env", "vllm", str(versions.pin("upstream.vllm")))
    lp = plan("standard", venv=venv)
    assert lp.build == "upstream"
    # issue 14: upstream 0.33.0 accepts every flag, the mismatch is still refused (other env)
    with pytest.raises(ConfigError, match="standard-upstream") as err:
        plan_mod.check_build(lp)
    assert "feat-ocr" in str(err.value)


def test_unknown_vllm_and_missing_env_are_refused(tmp_path: Path) -> None:
    lp = plan("dspark", venv=fake_venv(tmp_path / "a", "vllm", "0.9.0"))
    assert lp.build is None
    with pytest.raises(ConfigError, match="neither the feat-ocr build"):
        plan_mod.check_build(lp)
    lp = plan("dspark", venv=tmp_path / "absent")
    with pytest.raises(ConfigError, match="not found"):
        plan_mod.check_build(lp)
    plan_mod.check_build(plan("dspark", venv=tmp_path / "absent", build="feat-ocr"))  # declared


def test_transformers_build_detection(tmp_path: Path) -> None:
    ok = plan("tf", venv=fake_venv(tmp_path / "ok", "transformers", TF_OK, py="3.11"))
    assert ok.build == "transformers"
    fork = plan(
        "tf",
        venv=fake_venv(tmp_path / "fork", "transformers", str(versions.pin("transformers.fork-version"))),
    )
    assert fork.build == "transformers"
    old = plan("tf", venv=fake_venv(tmp_path / "old", "transformers", "4.57.1"))
    assert old.build is None and "no minicpm_ocr" in old.build_detail


def test_no_gpu_blocks_vllm_but_not_tf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    venv = fake_venv(tmp_path / "v", "vllm", f"0.11.1+g{FORK}")
    models = tmp_path / "models"
    (models / "main").mkdir(parents=True)
    (models / "draft").mkdir()
    lp = plan(
        "dspark", venv=venv, vars={"model": models / "main", "draft_model": models / "draft", "port": 1}
    )
    assert "CUDA_VISIBLE_DEVICES" not in lp.env_set
    with pytest.raises(ConfigError, match="needs an NVIDIA GPU: no NVIDIA GPU found"):
        process.preflight(lp)
    tf = plan("tf", venv=fake_venv(tmp_path / "t", "transformers", TF_OK), vars={"model": models / "main"})
    assert any("runs on the CPU" in n for n in tf.notes)


def test_missing_model_dir_is_reported(tmp_path: Path) -> None:
    lp = plan("tf", venv=fake_venv(tmp_path / "t", "transformers", TF_OK), vars={"model": tmp_path / "nope"})
    with pytest.raises(ConfigError, match="model not found"):
        process.preflight(lp)


@pytest.mark.server
def test_port_in_use_is_reported_before_launch(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert process.port_in_use("127.0.0.1", port)
        (tmp_path / "m").mkdir()
        lp = plan(
            "tf",
            venv=fake_venv(tmp_path / "t", "transformers", TF_OK),
            vars={"model": tmp_path / "m", "port": port},
            run_dir=tmp_path / "run",
        )
        with pytest.raises(ConfigError, match=f"port {port} on 127.0.0.1 is already in use"):
            process.preflight(lp)
    assert not process.port_in_use("127.0.0.1", port)


def test_offline_env_and_served_name(tmp_path: Path) -> None:
    lp = plan("tf", offline=True, vars={"model": "/x/ck"})
    assert lp.env_set["HF_HUB_OFFLINE"] == "1" and lp.env_set["HF_HUB_DISABLE_UPDATE_CHECK"] == "1"
    assert lp.served_model == "/x/ck"  # transformers serve answers only to the path it pinned
    assert plan("dspark").served_model == versions.pin("serve.served-model-name")


def test_dry_run_prints_command_and_environment(capsys) -> None:
    assert cli.main(["serve", "--profile", "dspark", "--dry-run", "--gpu", "2"]) == 0
    out = capsys.readouterr().out
    assert "CUDA_VISIBLE_DEVICES=2" in out and "CUDA_HOME=" in out
    assert (
        '--speculative-config \'{"method":"dspark","model":"./models/MiniCPM-OCR-1.0-DSpark",'
        '"num_speculative_tokens":15,"enable_adaptive_verification":false}\''
    ) in out
    assert '--mm-processor-kwargs \'{"downsample_mode":"4x"}\'' in out


def test_stop_without_pid_file_is_a_clear_error(tmp_path: Path) -> None:
    rc = cli.main(["serve", "stop", "--port", "9", "--run-dir", str(tmp_path)])
    assert rc == 5


def test_stale_pid_is_not_killed(tmp_path: Path) -> None:
    import os

    (tmp_path / "serve-9.pid").write_text(f"{os.getpid()}\n")
    (tmp_path / "serve-9.json").write_text(
        '{"argv": ["x", "transformers-serve-that-is-not-me", "--port", "9"]}'
    )
    with pytest.raises(ConfigError, match="no longer runs the recorded server"):
        process.stop(tmp_path, 9)


def test_server_env_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "active"))
    assert plan("dspark").venv == tmp_path / "active"  # no ./vllm-ocr-env here
    (tmp_path / "vllm-ocr-env").mkdir()
    assert plan("dspark").venv == tmp_path / "vllm-ocr-env"  # the guide's directory wins (guide 3.2)
    assert plan("dspark", venv=tmp_path / "mine").venv == tmp_path / "mine"
    monkeypatch.delenv("VIRTUAL_ENV")
    monkeypatch.setenv("CONDA_PREFIX", str(tmp_path / "pixi"))
    assert plan("tf").venv == tmp_path / "pixi"  # `pixi run` environment
    monkeypatch.delenv("CONDA_PREFIX")
    monkeypatch.setattr(environment.sys, "prefix", str(tmp_path / "self"))
    monkeypatch.setattr(environment.sys, "base_prefix", "/usr")
    assert plan("tf").venv == tmp_path / "self"  # this interpreter's venv
    monkeypatch.setattr(environment.sys, "prefix", "/usr")
    assert plan("tf").venv == tmp_path / "tf-ocr-env"  # nothing found: the guide's dir, noted
    assert any("tf-ocr-env does not exist" in n for n in plan("tf").notes)


def test_conda_cuda_home_is_kept_when_the_pip_toolchain_is_absent(tmp_path: Path, monkeypatch) -> None:
    conda = tmp_path / "pixi-env"
    venv = fake_venv(conda, "vllm", f"0.11.1+g{FORK}")
    cuda = conda / "targets" / "x86_64-linux"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (cuda / "bin" / "nvcc").chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(cuda))
    lp = plan("dspark", venv=venv)
    assert lp.env["CUDA_HOME"] == str(cuda) and "CUDA_HOME" not in lp.env_set
    assert lp.env["PATH"].split(":")[:2] == [str(venv / "bin"), str(cuda / "bin")]
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nowhere"))  # stale value: the guide's path wins
    cu_dir = f"nvidia/cu{versions.pin('torch.cuda_major')}"
    assert plan("dspark", venv=venv).env_set["CUDA_HOME"].endswith(cu_dir)


@pytest.mark.proc
def test_cli_serve_refuses_upstream_build_before_launch(tmp_path: Path, capsys, fake_nvidia_smi) -> None:
    fake_nvidia_smi("no_driver")  # no usable GPU, whatever this host has
    venv = fake_venv(tmp_path / "env", "vllm", str(versions.pin("upstream.vllm")))
    (tmp_path / "m").mkdir()
    rc = cli.main(
        [
            "serve",
            "--profile",
            "standard",
            "--venv",
            str(venv),
            "--model",
            str(tmp_path / "m"),
            "--run-dir",
            str(tmp_path / "run"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == ConfigError.exit_code
    assert "targets the feat-ocr build but the environment has upstream" in err
    assert not (tmp_path / "run").exists()  # nothing was started


@pytest.mark.parametrize("name", sorted(plan_mod.profiles_mod.load().profiles))
def test_banner_names_the_source_once(name: str) -> None:
    lp = plan(name, gpu="0")
    banner = lp.render().splitlines()[0]
    assert banner.startswith(f"# profile {name}: ")
    assert banner.count(lp.profile.source) == 1, banner


@pytest.mark.proc
def test_dry_run_refuses_a_build_mismatch_like_the_real_run(tmp_path: Path, capsys, fake_nvidia_smi) -> None:
    fake_nvidia_smi("no_driver")  # no usable GPU, whatever this host has
    rc = cli.main(["serve", "--profile", "dspark", "--build", "upstream", "--dry-run"])
    out, err = capsys.readouterr()
    assert rc == ConfigError.exit_code
    assert "targets the feat-ocr build but the environment has upstream" in err
    assert "api_server" not in out  # no command printed as if it could run
    # detected (not declared) upstream build: refused the same way
    venv = fake_venv(tmp_path / "env", "vllm", str(versions.pin("upstream.vllm")))
    rc = cli.main(["serve", "--profile", "standard", "--venv", str(venv), "--dry-run"])
    assert rc == ConfigError.exit_code
    assert "targets the feat-ocr build but the environment has upstream" in capsys.readouterr().err


@pytest.mark.proc
def test_dry_run_still_prints_when_the_build_cannot_be_detected(
    tmp_path: Path, capsys, fake_nvidia_smi
) -> None:
    fake_nvidia_smi("no_driver")  # no usable GPU, whatever this host has
    rc = cli.main(["serve", "--profile", "dspark", "--venv", str(tmp_path / "absent"), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0 and "found: unknown" in out and "api_server" in out


def _conda_prefix(root: Path) -> Path:
    """conda-forge CUDA layout (PIXI-NOTES.md): nvcc in $PREFIX/bin, headers/libs in targets/."""
    prefix = fake_venv(root, "vllm", f"0.11.1+g{FORK}")
    (prefix / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (prefix / "bin" / "nvcc").chmod(0o755)
    (prefix / "targets" / "x86_64-linux" / "include").mkdir(parents=True)
    return prefix


@pytest.mark.proc
def test_pixi_cuda_home_in_the_conda_layout_is_kept(
    tmp_path: Path, monkeypatch, capsys, fake_nvidia_smi
) -> None:
    prefix = _conda_prefix(tmp_path / "pixi-env")
    targets = prefix / "targets" / "x86_64-linux"
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("CONDA_PREFIX", str(prefix))
    monkeypatch.setenv("CUDA_HOME", str(targets))  # what pixi's activation sets
    monkeypatch.chdir(tmp_path)  # no ./vllm-ocr-env here
    lp = plan("dspark")
    assert lp.venv == prefix
    assert lp.env["CUDA_HOME"] == str(targets) and "CUDA_HOME" not in lp.env_set
    assert str(prefix / "bin") in lp.env["PATH"].split(":")  # the real nvcc is $CONDA_PREFIX/bin/nvcc
    assert not any("does not exist" in n for n in lp.notes), lp.notes
    # the printed plan shows the CUDA_HOME the server will get, not the absent pip path
    fake_nvidia_smi("no_driver")  # no usable GPU, whatever this host has
    assert cli.main(["serve", "--profile", "dspark", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert [ln for ln in out.splitlines() if ln.startswith("CUDA_HOME=")] == [f"CUDA_HOME={targets}"]
    assert "does not exist" not in out
    # a server env elsewhere (--venv) still gets the pixi toolchain's bin on its PATH
    other = fake_venv(tmp_path / "other", "vllm", f"0.11.1+g{FORK}")
    lp = plan("dspark", venv=other)
    assert lp.env["CUDA_HOME"] == str(targets)
    assert lp.env["PATH"].split(":")[:2] == [str(other / "bin"), str(prefix / "bin")]


def test_conda_layout_without_nvcc_falls_back_to_the_guide_path(tmp_path: Path, monkeypatch) -> None:
    prefix = _conda_prefix(tmp_path / "pixi-env")
    (prefix / "bin" / "nvcc").unlink()
    monkeypatch.setenv("CUDA_HOME", str(prefix / "targets" / "x86_64-linux"))
    lp = plan("dspark", venv=prefix)
    assert lp.env_set["CUDA_HOME"].endswith(f"nvidia/cu{versions.pin('torch.cuda_major')}")
    assert any("does not exist" in n for n in lp.notes)


@pytest.mark.proc
def test_upstream_profiles_run_on_the_upstream_build(
    tmp_path: Path, monkeypatch, capsys, fake_nvidia_smi
) -> None:
    fake_nvidia_smi("no_driver")  # no usable GPU, whatever this host has
    monkeypatch.chdir(tmp_path)
    up = fake_venv(tmp_path / "pixi-vllm", "vllm", str(versions.pin("upstream.vllm")))
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("CONDA_PREFIX", str(up))  # `pixi run -e vllm`
    (tmp_path / "vllm-ocr-env").mkdir()  # the guide's feat-ocr env must not be picked for upstream
    for name in ("dspark-upstream", "standard-upstream"):
        lp = plan(name)
        assert lp.venv == up and lp.build == "upstream", name
        plan_mod.check_build(lp)
        assert "--trust-request-mm-kwargs" in lp.argv  # issue 14: 0.33.0 defines it
    assert cli.main(["serve", "--profile", "dspark-upstream", "--dry-run"]) == 0
    assert "--speculative-config" in capsys.readouterr().out
    # the feat-ocr profile on this env is refused, and the message points at the upstream twin
    with pytest.raises(ConfigError) as err:
        plan_mod.check_build(plan("dspark", venv=up))
    assert "dspark-upstream" in err.value.remedy
    feat = fake_venv(tmp_path / "feat", "vllm", f"0.11.1+g{FORK}")
    with pytest.raises(ConfigError, match="targets the upstream build but the environment has feat-ocr"):
        plan_mod.check_build(plan("dspark-upstream", venv=feat))


def test_pip_cuda_libs_without_nvcc_do_not_hide_the_pixi_toolchain(tmp_path: Path, monkeypatch) -> None:
    # PyPI torch cu13 wheels put runtime libs under site-packages/nvidia/cu13/lib, without nvcc
    prefix = _conda_prefix(tmp_path / "pixi-env")
    cu = environment.cuda_home(prefix)
    (cu / "lib").mkdir(parents=True)
    targets = prefix / "targets" / "x86_64-linux"
    monkeypatch.setenv("CUDA_HOME", str(targets))
    lp = plan("dspark", venv=prefix)
    assert lp.env["CUDA_HOME"] == str(targets) and "CUDA_HOME" not in lp.env_set
    monkeypatch.delenv("CUDA_HOME")  # nothing better: the guide's path, with the reason noted
    lp = plan("dspark", venv=prefix)
    assert lp.env_set["CUDA_HOME"] == str(cu)
    assert any("no executable bin/nvcc" in n for n in lp.notes), lp.notes


def test_server_argv_is_the_planned_command_without_venv_or_gpu(tmp_path: Path) -> None:
    """server_argv (used to render container args) = the plan's argv with the program left bare."""
    venv = fake_venv(tmp_path / "vllm-ocr-env", "vllm", f"0.11.1.dev42+g{FORK[:9]}.cu130")
    lp = plan("dspark", venv=venv, gpu="0", vars={"port": 18600})
    argv = plan_mod.server_argv("dspark", {"port": 18600})
    assert argv[1:] == lp.argv[1:] and lp.argv[0] == str(venv / "bin" / "python")
    assert argv[0] == "python" and "18600" in argv
    assert plan_mod.server_argv("dspark", extra=("--enforce-eager",))[-1] == "--enforce-eager"


def test_plan_without_a_usable_gpu_chooses_none_and_says_why() -> None:
    lp = plan("dspark", "no_driver")
    assert "CUDA_VISIBLE_DEVICES" not in lp.env_set
    assert any("nvidia-smi failed: NVIDIA-SMI has failed" in n for n in lp.notes), lp.notes
    assert "no NVIDIA GPU found (nvidia-smi not on PATH)" in plan("dspark").notes


@pytest.mark.proc
def test_plan_asks_the_nvidia_smi_on_path_for_the_freest_gpu(fake_nvidia_smi, capsys) -> None:
    """No recorded answer handed in: plan and ``serve --dry-run`` run nvidia-smi (a stand-in here)."""
    fake_nvidia_smi("busy_4090")
    lp = plan_mod.plan(ServeOptions("dspark"))
    assert lp.env_set["CUDA_VISIBLE_DEVICES"] == "1"
    assert any("GPU 1 (NVIDIA GeForce RTX 4090) is the freest" in n for n in lp.notes), lp.notes
    assert cli.main(["serve", "--profile", "dspark", "--dry-run"]) == 0
    assert "CUDA_VISIBLE_DEVICES=1" in capsys.readouterr().out
    assert plan_mod.plan(ServeOptions("dspark", gpu="3")).env_set["CUDA_VISIBLE_DEVICES"] == "3"
