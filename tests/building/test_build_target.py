"""The target interpreter check: wrong Python or an SDK environment is refused before any step."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest
import yaml

from ocrstack.building import runner, target
from ocrstack.cli import main
from ocrstack.core.errors import ConfigError
from ocrstack.core.results import Status


@pytest.fixture
def pins(repo: Path) -> dict:
    return yaml.safe_load((repo / "envs" / "versions.yaml").read_text())


def facts(python: str, **dists: str) -> target.TargetFacts:
    return target.TargetFacts(python, "/env/bin/python", dict(dists))


def test_python_must_satisfy_the_pin(pins: dict) -> None:
    assert pins["python"]["vllm-build"] == "3.13"  # guide 3.2 / 9; the test below relies on it
    by = {c.name: c for c in target.check_target("vllm-build", facts("3.11.7")).checks}
    assert by["target-python"].status is Status.FAIL and "--allow-other-python" in by["target-python"].fix
    assert target.check_target("vllm-build", facts("3.13.9")).ok
    assert not target.check_target("vllm", facts("3.12.3")).ok
    # tf: ">=3.10" (guide 2) is a specifier, taken as is
    assert target.check_target("tf", facts("3.10.12")).ok
    assert not target.check_target("tf", facts("3.9.18")).ok


def test_sdk_environment_refused(pins: dict) -> None:
    sdk = facts("3.13.9", paddlex=pins["sdk"]["paddlex"], rapidocr="3.4.0")
    report = target.check_target("vllm-build", sdk)
    bad = next(c for c in report.checks if c.name == "target-not-sdk")
    assert bad.status is Status.FAIL and "paddlex" in bad.detail and "rapidocr" in bad.detail
    allowed = target.check_target("vllm-build", sdk, allow_other_python=True)
    assert allowed.ok and {c.status for c in allowed.checks} == {Status.WARN, Status.PASS}


def test_sdk_markers_come_from_the_pins_and_the_sdk_extra(pins: dict) -> None:
    names = target.sdk_packages()
    for dist in ("minicpmvocr", "paddlex", "paddlepaddle", "paddlepaddle-gpu"):
        assert dist in names
    assert not any(n.endswith("-index") for n in names)
    assert "pypdfium2" not in names  # a core ocrstack dependency, present in every environment
    try:
        import importlib.metadata as m

        extra = [r for r in (m.requires("ocrstack") or []) if 'extra == "sdk"' in r]
    except m.PackageNotFoundError:
        pytest.skip("ocrstack not installed: no metadata for its sdk extra")
    if extra:
        assert "rapidocr" in names


def test_cli_refuses_a_311_sdk_venv_before_any_step(
    tmp_path: Path,
    pins: dict,
    fake_target,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    probed = fake_target("3.11.7", {"paddlex": "3.4.2", "rapidocr": "3.4.0"})

    def must_not_run(*a, **kw):
        raise AssertionError("a build step ran although the target is wrong")

    monkeypatch.setattr(runner, "run_plan", must_not_run)
    sdk_py = str(tmp_path / "sdk-env" / "bin" / "python")
    rc = main(["build", "vllm-prebuilt", "--python", sdk_py, "--log-dir", str(tmp_path / "logs")])
    err = capsys.readouterr().err
    assert rc == ConfigError.exit_code == 9
    assert "Python 3.11.7" in err and "paddlex 3.4.2" in err and "--allow-other-python" in err
    assert probed == [sdk_py]
    # --dry-run refuses the same way (after printing the plan)
    rc = main(["build", "vllm-prebuilt", "--python", sdk_py, "--dry-run"])
    out, err = capsys.readouterr()
    assert rc == 9 and "vllm-wheel" in out and "Python 3.11.7" in err
    assert f"{sdk_py}: Python {pins['python']['vllm']} (python.vllm), no SDK packages" in out  # preflight
    # overridden: warnings only
    rc = main(["build", "vllm-prebuilt", "--python", sdk_py, "--dry-run", "--allow-other-python"])
    assert rc == 0 and "[   warn] target-python" in capsys.readouterr().err


@pytest.mark.proc  # the source checks before it run git
def test_source_build_dry_run_checks_the_target(
    tmp_path: Path, fake_target, pinned_repos: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_target("3.11.7")
    argv = ["build", "vllm", "--src", str(pinned_repos["vllm"])]
    argv += ["--transformers-src", str(pinned_repos["transformers"])]
    argv += ["--cuda-home", str(tmp_path), "--python", "/sdk/bin/python", "--dry-run"]
    assert main(argv) == ConfigError.exit_code
    assert "pin python.vllm-build: 3.13" in capsys.readouterr().err


@pytest.mark.proc
def test_probe_reads_the_real_interpreter() -> None:
    got = target.probe(sys.executable, ("pyyaml", "no-such-dist-ocrstack"))
    assert got.python == platform.python_version()
    import importlib.metadata as m

    assert got.dists == {"pyyaml": m.version("pyyaml"), "no-such-dist-ocrstack": None}


@pytest.mark.proc
def test_a_fake_sdk_interpreter_is_refused_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real probe runs a stand-in interpreter that answers like a Python 3.11 SDK venv."""
    answer = {"python": "3.11.7", "executable": str(tmp_path / "python"), "dists": {"paddlex": "3.4.2"}}
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\ncat <<'OUT'\n{json.dumps(answer)}\nOUT\n")
    fake.chmod(0o755)
    rc = main(["build", "vllm-prebuilt", "--python", str(fake), "--log-dir", str(tmp_path / "logs")])
    assert rc == 9 and not (tmp_path / "logs").exists()
    assert "paddlex 3.4.2" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="cannot run it"):
        target.probe(tmp_path / "missing-python", ())
