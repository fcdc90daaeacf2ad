"""`build vllm --dry-run` runs the read-only source checks and refuses as the real run would."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.cli import main
from ocrstack.core.errors import CheckFailed, InputError

from .test_build_sources import git

pytestmark = pytest.mark.proc  # git rev-parse on real tiny checkouts


def argv(repos: dict[str, Path], tmp_path: Path, *extra: str) -> list[str]:
    return [
        "build",
        "vllm",
        "--src",
        str(repos["vllm"]),
        "--transformers-src",
        str(repos["transformers"]),
        "--cuda-home",
        str(tmp_path / "cuda"),
        "--patches-dir",
        str(tmp_path / "none"),
        "--log-dir",
        str(tmp_path / "logs"),
        "--dry-run",
        *extra,
    ]


def test_pinned_commits_shown_as_passed(
    pinned_repos: dict, tmp_path: Path, fake_target, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_target()
    assert main(argv(pinned_repos, tmp_path)) == 0
    err = capsys.readouterr().err
    assert "[   pass] vllm-commit" in err and "[   pass] transformers-commit" in err


def test_checkout_at_another_commit_refused_in_dry_run(
    pinned_repos: dict, tmp_path: Path, fake_target, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_target()
    tsrc = pinned_repos["transformers"]
    (tsrc / "moved.txt").write_text("x")
    git(tsrc, "add", "moved.txt")
    git(tsrc, "commit", "-q", "-m", "moved on")
    assert main(argv(pinned_repos, tmp_path)) == CheckFailed.exit_code
    out, err = capsys.readouterr()
    assert "compile-vllm" in out  # the plan is still printed
    assert "[   fail] transformers-commit" in err and "--allow-other-commit" in err
    assert not (tmp_path / "logs").exists()
    assert main(argv(pinned_repos, tmp_path, "--allow-other-commit")) == 0
    assert "[   warn] transformers-commit" in capsys.readouterr().err


def test_missing_checkout_refused_in_dry_run(
    pinned_repos: dict, tmp_path: Path, fake_target, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_target()
    repos = {**pinned_repos, "vllm": tmp_path / "no-vllm"}
    assert main(argv(repos, tmp_path)) == InputError.exit_code
    assert "vllm source directory not found" in capsys.readouterr().err
