"""Pinned-commit checks and patches on real tiny git repositories made in tmp dirs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from ocrstack.building import plan as bp
from ocrstack.building import runner, sources, steps
from ocrstack.building.options import BuildOptions
from ocrstack.core.errors import InputError, StepFailed
from ocrstack.core.results import Status

pytestmark = pytest.mark.proc

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_SYSTEM": "/dev/null",
}


def git(repo: Path, *args: str) -> str:
    import os

    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()


def make_repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    for name, text in files.items():
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return git(path, "rev-parse", "HEAD")


@pytest.fixture
def checkouts(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Two repos, and a versions.yaml copy whose fork-commit pins are their HEADs (abbreviated to 10)."""
    v_head = make_repo(
        tmp_path / "vllm", {"setup.py": "# vllm\n", "kernel.cu": "".join(f"line {i}\n" for i in range(1, 11))}
    )
    t_head = make_repo(tmp_path / "transformers", {"setup.py": "# transformers\n"})
    data = yaml.safe_load((repo / "envs" / "versions.yaml").read_text())
    data["vllm"]["fork-commit"] = v_head[:10]
    data["transformers"]["fork-commit"] = t_head[:10]
    vfile = tmp_path / "versions.yaml"
    vfile.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("OCRSTACK_VERSIONS", str(vfile))
    return {"vllm": tmp_path / "vllm", "transformers": tmp_path / "transformers", "v_head": v_head}


def test_pinned_commits_pass(checkouts: dict) -> None:
    report = sources.check_sources(checkouts["vllm"], checkouts["transformers"])
    assert report.ok, report.to_text()
    assert [c.status for c in report.checks] == [Status.PASS, Status.PASS]


def test_other_commit_refused_unless_allowed(checkouts: dict) -> None:
    (checkouts["vllm"] / "new.txt").write_text("x")
    git(checkouts["vllm"], "add", "new.txt")
    git(checkouts["vllm"], "commit", "-q", "-m", "moved on")
    report = sources.check_sources(checkouts["vllm"], checkouts["transformers"])
    bad = report.checks[0]
    assert bad.status is Status.FAIL and not report.ok
    assert f"checkout {checkouts['v_head'][:10]}" in bad.fix and "--allow-other-commit" in bad.fix
    allowed = sources.check_sources(checkouts["vllm"], checkouts["transformers"], allow_other_commit=True)
    assert allowed.ok and allowed.checks[0].status is Status.WARN


def test_not_a_git_checkout_and_not_a_project(tmp_path: Path, checkouts: dict) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "setup.py").write_text("")
    assert sources.check_source("vllm", plain, False).status is Status.FAIL
    assert sources.check_source("vllm", plain, True).status is Status.WARN
    with pytest.raises(InputError, match="no setup.py"):
        sources.check_source("vllm", tmp_path, False)
    with pytest.raises(InputError, match="not found"):
        sources.check_source("vllm", tmp_path / "missing", False)


def make_patch(repo: Path, dest: Path, old: str, new: str) -> Path:
    f = repo / "kernel.cu"
    f.write_text(f.read_text().replace(old, new))
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(git(repo, "diff") + "\n")
    git(repo, "checkout", "--", "kernel.cu")
    return dest


def patch_plan(checkouts: dict, patches_dir: Path) -> steps.Plan:
    opts = BuildOptions(
        src=checkouts["vllm"], transformers_src=checkouts["transformers"], patches_dir=patches_dir
    )
    full = bp.vllm_plan(
        opts,
        steps.Toolchain("given", "/cuda", "gcc", "g++", "g++"),
        1,
        patches=sources.list_patches(patches_dir),
    )
    patch_steps = tuple(s for s in full.steps if s.name.startswith("patch-"))
    return steps.Plan("patches", full.python, patch_steps)


def test_patches_apply_once_and_rerun_skips(tmp_path: Path, checkouts: dict) -> None:
    pdir = tmp_path / "patches"
    make_patch(checkouts["vllm"], pdir / "vllm" / "0001-fix.patch", "line 2\n", "line two\n")
    p = patch_plan(checkouts, pdir)
    assert p.names() == ["patch-check:vllm/0001-fix.patch", "patch-apply:vllm/0001-fix.patch"]
    out = runner.run_plan(p, tmp_path / "logs", out=open("/dev/null", "w"))
    assert [o.status for o in out] == ["ran", "ran"]
    assert (checkouts["vllm"] / "kernel.cu").read_text().splitlines()[:3] == ["line 1", "line two", "line 3"]
    again = runner.run_plan(p, tmp_path / "logs", out=open("/dev/null", "w"))
    assert [o.status for o in again] == ["skipped", "skipped"]


def test_conflicting_patch_applies_nothing(tmp_path: Path, checkouts: dict) -> None:
    pdir = tmp_path / "patches"
    make_patch(checkouts["vllm"], pdir / "vllm" / "0001-ok.patch", "line 1\n", "line one\n")
    make_patch(checkouts["vllm"], pdir / "vllm" / "0002-bad.patch", "line 10\n", "line zehn\n")
    # make 0002 stale: the checkout's line 10 changes underneath it (0001's context is untouched)
    upstream = "".join(f"line {i}\n" for i in range(1, 10)) + "line 10 changed upstream\n"
    (checkouts["vllm"] / "kernel.cu").write_text(upstream)
    p = patch_plan(checkouts, pdir)
    with pytest.raises(StepFailed, match="patch-check:vllm/0002-bad.patch"):
        runner.run_plan(p, tmp_path / "logs", out=open("/dev/null", "w"))
    assert (checkouts["vllm"] / "kernel.cu").read_text() == upstream  # 0001 checked fine but not applied
    log = (tmp_path / "logs" / "02-patch-check_vllm_0002-bad.patch.log").read_text()
    assert "patch does not apply" in log


def test_unknown_patch_project(tmp_path: Path) -> None:
    (tmp_path / "vlm").mkdir()
    with pytest.raises(InputError, match="unknown patch project"):
        sources.list_patches(tmp_path)
    assert sources.list_patches(tmp_path / "absent") == []
