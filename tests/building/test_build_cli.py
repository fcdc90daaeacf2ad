"""`ocrstack build vllm` preflight on real tiny git checkouts: refuses before running any step."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ocrstack.building import offline
from ocrstack.cli import main
from ocrstack.errors import CheckFailed, ConfigError, InputError

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
