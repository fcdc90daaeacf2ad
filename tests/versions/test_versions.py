"""Tests for ocrstack.versions and the `versions` CLI verb."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ocrstack import versions
from ocrstack.cli import main
from ocrstack.core.errors import ConfigError, EnvironmentMismatch
from ocrstack.core.results import Status


def fake_lookup(table: dict[str, str]):
    return lambda dist: table.get(dist)


def test_pins_come_from_versions_yaml(repo: Path) -> None:
    raw = yaml.safe_load((repo / "envs" / "versions.yaml").read_text())
    assert versions.pin("serve.port") == raw["serve"]["port"] == 18499
    assert versions.pin("serve.served-model-name") == "minicpm-ocr"
    assert versions.pin("transformers.fork-version") == "5.19.0.dev0"
    with pytest.raises(ConfigError, match="no pin"):
        versions.pin("serve.nope")


def test_vllm_build_env_passes_with_guide_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "version_info", (3, 13, 9, "final", 0))
    report = versions.check(
        "vllm-build",
        lookup=fake_lookup(
            {
                "torch": "2.14.0+cu130",
                "torchvision": "0.29.0+cu130",
                "torchaudio": "2.11.0+cu130",
                "transformers": "5.19.0.dev0",
                "vllm": "0.11.1.dev123+g5c2b92a5d.cu130",
            }
        ),
    )
    assert report.ok, report.to_text()


def test_overwritten_fork_is_diagnosed() -> None:
    """guide 8: transformers 5.19.0 instead of 5.19.0.dev0 means the fork was overwritten."""
    report = versions.check("vllm-build", lookup=fake_lookup({"transformers": "5.19.0"}))
    tf = next(c for c in report.checks if c.name == "transformers")
    assert tf.status is Status.FAIL
    assert "overwritten" in tf.detail
    assert "--no-deps -e" in tf.fix


def test_cpu_torch_fails_cu130_expectation() -> None:
    report = versions.check("vllm-build", lookup=fake_lookup({"torch": "2.14.0+cpu"}))
    assert next(c for c in report.checks if c.name == "torch").status is Status.FAIL


def test_sdk_env_must_not_hold_torch() -> None:
    report = versions.check("sdk", lookup=fake_lookup({"pypdfium2": "5.0.0", "torch": "2.14.1"}))
    assert next(c for c in report.checks if c.name == "no-torch").status is Status.FAIL
    assert not report.ok


def test_unknown_env_lists_valid_ones() -> None:
    with pytest.raises(ConfigError, match="vllm-build"):
        versions.check("nope")


def test_cli_check_exit_code_and_fix(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["versions", "check", "--env", "vllm-build"])
    assert rc == EnvironmentMismatch.exit_code
    err = capsys.readouterr().err
    assert "fix:" in err


@pytest.mark.proc
def test_cli_reports_this_machine(cli_env: dict[str, str]) -> None:
    """The real installed versions of this test environment against the cpu-test pins."""
    proc = subprocess.run(
        ["ocrstack", "versions", "check", "--env", "cpu-test", "--json"],
        capture_output=True,
        text=True,
        env=cli_env,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"ok": true' in proc.stdout
    show = subprocess.run(
        ["ocrstack", "versions", "show"], capture_output=True, text=True, env=cli_env, check=True
    )
    assert "18499" in show.stdout


@pytest.mark.proc
def test_version_flag(cli_env: dict[str, str]) -> None:
    out = subprocess.run(["ocrstack", "--version"], capture_output=True, text=True, env=cli_env, check=True)
    assert out.stdout.startswith("ocrstack ")
