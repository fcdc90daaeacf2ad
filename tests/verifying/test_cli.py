"""``ocrstack verify`` through the CLI entry point: exit codes and what the user is told."""

from __future__ import annotations

import pytest

from ocrstack.cli import main
from ocrstack.errors import UsageError


def test_verify_without_arguments_exits_2_and_names_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["verify"])
    captured = capsys.readouterr()
    assert rc == UsageError.exit_code == 2
    assert captured.out == ""  # no report that could be read as a result
    for flag in ("--markdown", "--dspark-url", "--tiny", "--image", "--tf-model", "--server-url"):
        assert flag in captured.err


def test_verify_report_dir_alone_is_still_nothing_to_check(tmp_path) -> None:
    """`pixi run verify` passes only --report-dir: no report is written, exit 2."""
    assert main(["verify", "--report-dir", str(tmp_path / "rep")]) == 2
    assert not (tmp_path / "rep").exists()
