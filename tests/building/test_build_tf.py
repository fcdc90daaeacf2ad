"""`ocrstack build tf`: the guide 3.3 transformers environment (feat-ocr fork with [serving] and deps)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ocrstack.building import plan as bp
from ocrstack.building import runner
from ocrstack.building.options import TfOptions
from ocrstack.building.runner import condition_holds
from ocrstack.building.sources import Patch
from ocrstack.cli import main
from ocrstack.core.errors import CheckFailed, ConfigError

from .test_build_sources import git


@pytest.fixture
def pins(repo: Path) -> dict:
    """The raw versions.yaml, read independently of ocrstack.versions."""
    return yaml.safe_load((repo / "envs" / "versions.yaml").read_text())


def tf_opts(tmp_path: Path) -> TfOptions:
    return TfOptions(transformers_src=tmp_path / "transformers", python=Path("/tf/bin/python"))


def test_order_torch_then_fork_with_deps_then_checks(tmp_path: Path) -> None:
    p = bp.tf_plan(tf_opts(tmp_path))
    assert p.names() == [
        "torch",
        "transformers-fork-serving",
        "accelerate",
        "versions-check",
        "minicpm-ocr-known",
    ]
    assert p.python == "/tf/bin/python"


def test_argv_and_pins(tmp_path: Path, pins: dict) -> None:
    p = bp.tf_plan(tf_opts(tmp_path))
    t = pins["torch"]
    torch = p.step("torch")
    # guide 3.3: torch and torchvision, no torchaudio; cu130 wheels as in the tf environment pins
    assert torch.argv[4:] == (
        f"torch=={t['torch']}",
        f"torchvision=={t['torchvision']}",
        "--index-url",
        t["index"],
    )
    assert {(c.dist, c.value) for c in torch.done.dists} == {
        ("torch", f"=={t['torch']}{t['local']}"),
        ("torchvision", f"=={t['torchvision']}{t['local']}"),
    }
    fork = p.step("transformers-fork-serving")
    # guide 3.3: pip install -e "<TRANSFORMERS_SRC>[serving]" -- WITH its dependencies
    assert fork.argv == (
        "/tf/bin/python",
        "-m",
        "pip",
        "install",
        "-e",
        f"{tmp_path / 'transformers'}[serving]",
    )
    assert "--no-deps" not in fork.argv
    assert p.step("accelerate").argv[4:] == ("accelerate",)
    assert p.step("versions-check").argv == (
        "/tf/bin/python",
        "-m",
        "ocrstack.building.assertions",
        "--env",
        "tf",
    )
    assert p.step("minicpm-ocr-known").argv == ("/tf/bin/python", str(bp.TFCHECKS), "arch", "minicpm_ocr")


def test_done_checks(tmp_path: Path, pins: dict) -> None:
    p = bp.tf_plan(tf_opts(tmp_path))
    fork = p.step("transformers-fork-serving").done
    (cond,) = fork.dists
    assert cond.dist == "transformers" and condition_holds(cond, pins["transformers"]["fork-version"])
    # the PyPI release of the same number is not the fork (guide 8)
    assert not condition_holds(cond, pins["transformers"]["fork-version"].removesuffix(".dev0"))
    assert fork.command == ("/tf/bin/python", str(bp.TFCHECKS), "extra", "serving")
    (acc,) = p.step("accelerate").done.dists
    assert condition_holds(acc, "1.10.0") and not condition_holds(acc, None)
    assert p.step("versions-check").done.never and p.step("minicpm-ocr-known").done.never


def test_only_transformers_patches(tmp_path: Path) -> None:
    patches = [Patch("vllm", tmp_path / "v.patch"), Patch("transformers", tmp_path / "t.patch")]
    names = bp.tf_plan(tf_opts(tmp_path), patches).names()
    assert names[1:3] == ["patch-check:transformers/t.patch", "patch-apply:transformers/t.patch"]
    assert not any("vllm/" in n for n in names)
    assert names.index("patch-apply:transformers/t.patch") < names.index("transformers-fork-serving")


def test_plan_is_pure(tmp_path: Path) -> None:
    bp.tf_plan(tf_opts(tmp_path))
    assert list(tmp_path.iterdir()) == []


def fake_transformers(site: Path, requires: list[str]) -> dict[str, str]:
    """A transformers dist-info on its own path entry; returns an environment that sees it first."""
    info = site / "transformers-5.19.0.dev0.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", "Name: transformers", "Version: 5.19.0.dev0"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    return {**os.environ, "PYTHONPATH": str(site)}


@pytest.mark.proc
def test_serving_extra_check_on_real_metadata(tmp_path: Path) -> None:
    def run(env: dict[str, str], extra: str = "serving") -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(bp.TFCHECKS), "extra", extra]
        return subprocess.run(argv, capture_output=True, text=True, env=env)

    missing = fake_transformers(
        tmp_path / "a", ['pyyaml>=1; extra == "serving"', 'no-such-dist-ocrstack>=1; extra == "serving"']
    )
    r = run(missing)
    assert r.returncode == 1 and "no-such-dist-ocrstack missing" in r.stdout and "pyyaml" not in r.stdout
    ok = fake_transformers(tmp_path / "b", ['pyyaml>=1; extra == "serving"', "no-such-dist-ocrstack"])
    assert run(ok).returncode == 0  # base requirements are not the extra's business
    assert "declares no [other] extra" in run(ok, "other").stdout
    too_old = fake_transformers(tmp_path / "c", ['pyyaml>=999; extra == "serving"'])
    assert run(too_old).returncode == 1


def dry_run_argv(tsrc: Path, *extra: str) -> list[str]:
    return ["build", "tf", "--transformers-src", str(tsrc), "--python", "/tf/bin/python", "--dry-run", *extra]


@pytest.mark.proc  # git rev-parse on a real tiny checkout
def test_dry_run_prints_plan_and_checks(
    pinned_repos: dict, tmp_path: Path, fake_target, capsys: pytest.CaptureFixture[str]
) -> None:
    probed = fake_target("3.10.12")  # guide 9: the tf env was verified on 3.10.12 and 3.13.9
    tsrc = pinned_repos["transformers"]
    assert main(dry_run_argv(tsrc, "--patches-dir", str(tmp_path / "none"))) == 0
    out, err = capsys.readouterr()
    numbered = [
        ln.split(":")[0].split(".", 1)[1].strip() for ln in out.splitlines() if ln[:4].strip()[:1].isdigit()
    ]
    assert numbered == [
        "torch",
        "transformers-fork-serving",
        "accelerate",
        "versions-check",
        "minicpm-ocr-known",
    ]
    assert f"-e '{tsrc}[serving]'" in out  # shlex-quoted in the rendering
    assert "[   pass] transformers-commit" in err and "[   pass] target-python" in err
    assert probed == ["/tf/bin/python"]
    assert main([*dry_run_argv(tsrc), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["steps"][1]["argv"][-1] == f"{tsrc}[serving]"


@pytest.mark.proc
def test_refusals(pinned_repos: dict, tmp_path: Path, fake_target, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "run_plan", lambda *a, **kw: pytest.fail("a step ran"))
    tsrc = pinned_repos["transformers"]
    fake_target("3.13.9", {"paddlex": "3.4.2"})  # the SDK env (guide 1)
    assert main(dry_run_argv(tsrc)) == ConfigError.exit_code
    assert main(["build", "tf", "--transformers-src", str(tsrc), "--python", "/sdk/bin/python"]) == 9
    fake_target()
    (tsrc / "x.txt").write_text("x")
    git(tsrc, "add", "x.txt")
    git(tsrc, "commit", "-q", "-m", "other commit")
    assert main(dry_run_argv(tsrc)) == CheckFailed.exit_code
    assert main([*dry_run_argv(tsrc), "--allow-other-commit"]) == 0


@pytest.mark.proc
def test_real_run_uses_the_shared_runner(
    pinned_repos: dict, tmp_path: Path, fake_target, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_target()
    seen: list[tuple[list[str], Path]] = []

    def fake_run_plan(p, log_dir, **kw):
        assert not kw  # the runner diagnoses a failed step itself (tests/building/test_build_runner.py)
        return seen.append((p.names(), log_dir)) or []

    monkeypatch.setattr(runner, "run_plan", fake_run_plan)
    argv = [
        "build",
        "tf",
        "--transformers-src",
        str(pinned_repos["transformers"]),
        "--python",
        "/tf/bin/python",
    ]
    argv += ["--patches-dir", str(tmp_path / "none"), "--log-dir", str(tmp_path / "logs")]
    assert main(argv) == 0
    assert seen == [(bp.tf_plan(tf_opts(tmp_path)).names(), tmp_path / "logs")]


@pytest.mark.proc
@pytest.mark.slow  # imports transformers in a child process (about 5 s here)
def test_arch_check_on_the_installed_transformers() -> None:
    """Releases in upstream.transformers (first with minicpm_ocr) know it; a made-up type is unknown."""
    import importlib.metadata as md

    from packaging.specifiers import SpecifierSet

    from ocrstack import versions

    try:
        installed = md.version("transformers")
    except md.PackageNotFoundError:
        pytest.skip("transformers not installed in this interpreter")
    ok = subprocess.run(
        [sys.executable, str(bp.TFCHECKS), "arch", "minicpm_ocr"], capture_output=True, text=True
    )
    bad = subprocess.run(
        [sys.executable, str(bp.TFCHECKS), "arch", "no_such_arch"], capture_output=True, text=True
    )
    if installed in SpecifierSet(versions.pin("upstream.transformers")):
        assert ok.returncode == 0 and "minicpm_ocr known" in ok.stdout, ok.stderr
    assert bad.returncode == 1 and "no_such_arch UNKNOWN" in bad.stdout
