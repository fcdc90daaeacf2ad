"""``ocrstack build mineru-diffusion``: the SGLang fork plan (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack import cli, versions
from ocrstack.building import mineru, runner
from ocrstack.core.errors import CheckFailed, InputError
from ocrstack.core.results import Status

COMMIT = str(versions.pin("mineru-diffusion.sglang-fork-commit"))


def fake_checkout(root: Path, fork: bool = True) -> Path:
    """An SGLang-shaped directory: upstream has python/pyproject.toml, the fork also its MinerU files."""
    (root / "python").mkdir(parents=True)
    (root / "python" / "pyproject.toml").write_text("[project]\nname = 'sglang'\n")
    if fork:
        for rel in mineru.FORK_MARKERS[1:]:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("# fork file\n")
    return root


def test_plan_order_argv_and_done_checks(tmp_path: Path) -> None:
    opts = mineru.MineruOptions(sglang_src=tmp_path / "sglang", python=Path("/md/bin/python"))
    p = mineru.mineru_plan(opts)
    assert p.names() == ["sglang-fork", "versions-check", "mineru-diffusion-known"]
    fork = p.step("sglang-fork")
    # docs/sglang/README.md: pip install -e "python[all]" from the checkout
    assert fork.argv == ("/md/bin/python", "-m", "pip", "install", "-e", f"{tmp_path}/sglang/python[all]")
    done = {d.dist: d for d in fork.done.dists}
    assert done["sglang"].op == "contains" and done["sglang"].value == COMMIT[:7]
    assert done["torch"].value == "==2.9.1" and done["transformers"].value == "==5.3.0"
    assert p.step("versions-check").argv[-2:] == ("--env", "mineru-diffusion")
    assert "sglang.srt.models.mineru_diffusion" in " ".join(p.step("mineru-diffusion-known").argv)
    assert any(COMMIT in line for line in p.preflight)


def test_upstream_sglang_is_refused_with_the_fork_named(tmp_path: Path) -> None:
    src = fake_checkout(tmp_path / "sglang", fork=False)
    with pytest.raises(InputError) as info:
        mineru.check_fork(src, allow_other_commit=False)
    assert "upstream SGLang" in info.value.message and "issue 8" in info.value.message
    assert str(versions.pin("mineru-diffusion.sglang-fork")) in info.value.remedy


def test_commit_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = fake_checkout(tmp_path / "sglang")
    monkeypatch.setattr(mineru, "head_commit", lambda _src: COMMIT)
    assert mineru.check_fork(src, False).status is Status.PASS
    monkeypatch.setattr(mineru, "head_commit", lambda _src: "0" * 40)
    assert mineru.check_fork(src, False).status is Status.FAIL
    assert mineru.check_fork(src, True).status is Status.WARN
    with pytest.raises(InputError):
        mineru.check_fork(tmp_path / "absent", False)


def test_cli_dry_run_prints_plan_and_runs_nothing(tmp_path, fake_target, monkeypatch, capsys) -> None:
    src = fake_checkout(tmp_path / "sglang")
    monkeypatch.setattr(mineru, "head_commit", lambda _src: COMMIT)
    monkeypatch.setattr(runner, "run_plan", lambda *a, **kw: pytest.fail("a step ran"))
    probed = fake_target("3.12.12")  # README: Python 3.12.12
    rc = cli.main(
        ["build", "mineru-diffusion", "--sglang-src", str(src), "--python", "/md/bin/python", "--dry-run"]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "1. sglang-fork" in out and f"{src}/python[all]" in out
    assert probed == ["/md/bin/python"]


def test_cli_refuses_another_commit(tmp_path, fake_target, monkeypatch) -> None:
    src = fake_checkout(tmp_path / "sglang")
    monkeypatch.setattr(mineru, "head_commit", lambda _src: "0" * 40)
    monkeypatch.setattr(runner, "run_plan", lambda *a, **kw: pytest.fail("a step ran"))
    fake_target("3.12.12")
    with pytest.raises(CheckFailed):
        mineru.build_mineru(mineru.MineruOptions(sglang_src=src, python=Path("/md/bin/python")))


def test_real_run_uses_the_shared_runner(tmp_path, fake_target, monkeypatch) -> None:
    src = fake_checkout(tmp_path / "sglang")
    monkeypatch.setattr(mineru, "head_commit", lambda _src: COMMIT)
    seen: list = []
    monkeypatch.setattr(runner, "run_plan", lambda p, log_dir, **kw: seen.append((p.names(), log_dir)))
    fake_target("3.12.12")
    opts = mineru.MineruOptions(sglang_src=src, python=Path("/md/bin/python"), log_dir=tmp_path / "logs")
    assert mineru.build_mineru(opts) == 0
    assert seen == [(["sglang-fork", "versions-check", "mineru-diffusion-known"], tmp_path / "logs")]
