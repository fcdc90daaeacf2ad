"""`ocrstack build vllm` preflight on real tiny git checkouts: refuses before running any step."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ocrstack.building import offline
from ocrstack.cli import main
from ocrstack.core.errors import CheckFailed, ConfigError, InputError

from .test_build_sources import make_repo

pytestmark = pytest.mark.proc


@pytest.fixture
def pinned(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, fake_target) -> list[str]:
    fake_target()  # a Python 3.13 target without SDK packages: the checks below are what refuses
    v = make_repo(tmp_path / "vllm", {"setup.py": ""})
    t = make_repo(tmp_path / "tf", {"setup.py": ""})
    data = yaml.safe_load((repo / "envs" / "versions.yaml").read_text())
    data["vllm"]["fork-commit"], data["transformers"]["fork-commit"] = v[:10], t[:10]
    (tmp_path / "versions.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("OCRSTACK_VERSIONS", str(tmp_path / "versions.yaml"))
    return [
        "build",
        "vllm",
        "--src",
        str(tmp_path / "vllm"),
        "--transformers-src",
        str(tmp_path / "tf"),
        "--cuda-home",
        str(tmp_path / "cuda"),
        "--python",  # a safety net: should preflight ever pass here, no step can touch a real env
        str(tmp_path / "no-such-python"),
        "--log-dir",
        str(tmp_path / "logs"),
        "--patches-dir",
        str(tmp_path / "none"),
    ]


def test_offline_without_deps_stops_with_variable_list(
    pinned: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(offline, "reachable", lambda host, port, timeout: False)
    assert main(pinned) == ConfigError.exit_code
    err = capsys.readouterr().err
    assert "github.com:443 is not reachable" in err and "TRITON_KERNELS_SRC_DIR" in err and "--deps" in err
    assert not (tmp_path / "logs").exists()  # no step ran


def test_missing_deps_dirs_stop_before_step_one(
    pinned: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "deps" / "cutlass-src").mkdir(parents=True)
    assert main([*pinned, "--deps", str(tmp_path / "deps")]) == InputError.exit_code
    assert "VLLM_FLASH_ATTN_SRC_DIR" in capsys.readouterr().err
    assert not (tmp_path / "logs").exists()


def test_wrong_commit_refused(
    pinned: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load((tmp_path / "versions.yaml").read_text())
    data["vllm"]["fork-commit"] = "5c2b92a5dc"
    (tmp_path / "versions.yaml").write_text(yaml.safe_dump(data))
    assert main(pinned) == CheckFailed.exit_code
    assert "--allow-other-commit" in capsys.readouterr().err
    assert not (tmp_path / "logs").exists()


def fake_built_env(tmp_path: Path, vllm_version: str) -> str:
    """A stand-in target interpreter whose only answer is the installed-versions JSON of the runner."""
    py = tmp_path / "built-env-python"
    py.write_text(f'#!/bin/sh\necho \'{{"vllm": "{vllm_version}"}}\'\n')
    py.chmod(0o755)
    return str(py)


def test_rerun_after_compile_needs_no_github(
    pinned: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Offline host, vLLM already compiled: the rerun must not stop at the GitHub probe (issue 5 review)."""
    from ocrstack import versions
    from ocrstack.building import runner

    probes: list[str] = []
    monkeypatch.setattr(offline, "reachable", lambda host, port, timeout: probes.append(host) or False)
    ran: list[list[str]] = []
    monkeypatch.setattr(runner, "run_plan", lambda p, log_dir, **kw: ran.append(p.names()) or [])
    commit = str(versions.pin("vllm.fork-commit"))  # the tiny repo's HEAD (pinned fixture)
    # compile-vllm's done-check: vllm from the pinned commit installed, and the extension file built
    py = fake_built_env(tmp_path, f"0.16.1.dev5+g{commit[:9]}.cu130")
    (tmp_path / "vllm" / "vllm").mkdir()
    (tmp_path / "vllm" / "vllm" / str(versions.pin("vllm.extension"))).write_bytes(b"\x7fELF")

    assert main([*pinned, "--python", py]) == 0
    assert probes == [] and "compile-vllm" in ran[0]
    assert "compile-vllm already done" in capsys.readouterr().err

    # the same rerun without the built extension does need the compile, hence the probe
    (tmp_path / "vllm" / "vllm" / str(versions.pin("vllm.extension"))).unlink()
    assert main([*pinned, "--python", py]) == ConfigError.exit_code
    assert probes == ["github.com"] and len(ran) == 1


def test_from_transformers_fork_needs_no_github(
    pinned: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from ocrstack.building import runner

    monkeypatch.setattr(
        offline, "reachable", lambda *a: pytest.fail("GitHub probed for --from transformers-fork")
    )
    ran: list[list[str]] = []
    monkeypatch.setattr(runner, "run_plan", lambda p, log_dir, **kw: ran.append(p.names()) or [])
    assert main([*pinned, "--from", "transformers-fork"]) == 0
    assert ran == [["transformers-fork", "versions-check", "import-vllm", "extension-file"]]
