"""The CLI contract: one error base class, distinct exit codes, one-line messages with a remedy."""

from __future__ import annotations

import argparse
import errno
import inspect
import os
import subprocess

import pytest

from ocrstack.cli import build_parser, main, subcommands
from ocrstack.core import errors


def error_classes() -> list[type[errors.OcrstackError]]:
    return [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.OcrstackError)]


def test_each_error_kind_has_its_own_exit_code() -> None:
    """A kind is a direct subclass of OcrstackError; a refinement of a kind (OutputLocked is a
    UsageError) keeps its kind's code, so scripts only need the table in the README."""
    classes = [c for c in error_classes() if c is not errors.OcrstackError]
    kinds = [c for c in classes if c.__bases__ == (errors.OcrstackError,)]
    codes = [c.exit_code for c in kinds]
    assert len(codes) == len(set(codes)), {c.__name__: c.exit_code for c in kinds}
    assert 0 not in codes
    for c in classes:
        kind = next(k for k in kinds if issubclass(c, k))
        assert c.exit_code == kind.exit_code, f"{c.__name__} must keep {kind.__name__}'s exit code"


def test_message_is_one_line_with_remedy() -> None:
    err = errors.InputError("doc.pdf: password required\n  (encrypted)", "pass --password")
    assert "\n" not in str(err)
    assert str(err).endswith("fix: pass --password")


def test_main_maps_errors_to_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions", "check", "--env", "no-such-env"]) == errors.ConfigError.exit_code
    err = capsys.readouterr().err
    assert err.startswith("ocrstack: error: unknown environment 'no-such-env'")
    assert err.count("\n") == 1


def test_every_subcommand_has_help() -> None:
    parser = build_parser()
    assert parser.prog == "ocrstack"
    for name, sub in subcommands().items():
        assert sub.format_help().strip(), name


def test_unit_tests_cannot_start_processes_unmarked() -> None:
    """The autouse guard in tests/conftest.py: an unmarked test that spawns a process fails."""
    with pytest.raises(AssertionError, match="mark it with one of"):
        subprocess.run(["true"], check=False)


def test_closed_pipe_is_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ocrstack ... | head`: a BrokenPipeError from printing ends quietly with 128 + SIGPIPE."""
    from ocrstack import versions

    def broken(*_a, **_k):
        raise BrokenPipeError

    monkeypatch.setattr(versions, "show", broken)
    monkeypatch.setattr("os.dup2", lambda *a: None)  # keep pytest's own stdout
    assert main(["versions", "show"]) == 141


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_is_one_line_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], code: int
) -> None:
    """Issue 25 item 3: ENOSPC anywhere in a verb -> DiskFull's one line and exit 9."""
    from ocrstack import versions

    def full(*_a, **_k):
        raise OSError(code, os.strerror(code), "/out/doc.md")

    monkeypatch.setattr(versions, "show", full)
    assert main(["versions", "show"]) == errors.DiskFull.exit_code == 9
    err = capsys.readouterr().err
    assert err == (
        f"ocrstack: error: no space left on the device writing /out/doc.md ({os.strerror(code)}) "
        "-- fix: free space there (or write elsewhere, e.g. another -o) and run again\n"
    )


def test_other_os_errors_are_not_called_a_full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    from ocrstack import versions

    def denied(*_a, **_k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(versions, "show", denied)
    with pytest.raises(PermissionError):
        main(["versions", "show"])


def test_json_is_one_declaration_for_every_verb() -> None:
    """Every ``--json`` of every (sub)command is the shared one: ``args.json``, False when absent."""
    from ocrstack.commands import Output

    def parsers(p: argparse.ArgumentParser):
        yield p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    yield from parsers(child)

    found = [(p.prog, a) for p in parsers(build_parser()) for a in p._actions if "--json" in a.option_strings]
    assert len(found) >= 16
    for prog, action in found:
        assert action.dest == "json" and action.default is Output.json is False, prog
        assert "as JSON" in action.help, prog
