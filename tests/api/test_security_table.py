"""``ocrstack api security`` (issue 25's attack table): the table's rows, its exit status, a case that
raises, and one local case run for real (the whole table runs in ``.ci/run`` and ``nox -s security``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.api import security
from ocrstack.api.security import Table, local
from ocrstack.cli import main


def test_a_failed_or_broken_case_fails_the_table_and_is_named() -> None:
    table = Table()
    table.attempt("holds", "x", lambda: ("x", True))
    table.attempt("breaks", "y", lambda: 1 / 0)
    table.add("fails", "403", "HTTP 200", False)
    assert not table.ok
    text = table.text()
    assert "ZeroDivisionError" in text and text.endswith("3 case(s): 1 held, 2 failed")
    assert [line.split()[-1] for line in text.splitlines()[2:5]] == ["held", "FAILED", "FAILED"]


@pytest.mark.parametrize(("held", "code"), [(True, 0), (False, 1)])
def test_the_command_prints_the_table_and_exits_1_when_a_case_failed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], held: bool, code: int
) -> None:
    table = Table()
    table.add("cross-origin POST", "403", "HTTP 403" if held else "HTTP 202", held)
    monkeypatch.setattr(security, "run", lambda workdir=None: table)
    assert main(["api", "security"]) == code
    assert "cross-origin POST" in capsys.readouterr().out


@pytest.mark.proc  # ocrstack parse in a subprocess
@pytest.mark.server  # a fake OpenAI server on 127.0.0.1
def test_the_hostile_batch_case_holds(tmp_path: Path) -> None:
    observed, held = local._hostile_batch(tmp_path)
    assert held, observed
    assert "3/3 written" in observed or observed.startswith("not tried")


@pytest.mark.proc  # ocrstack api serve in a subprocess
def test_the_damaged_database_case_holds(tmp_path: Path) -> None:
    observed, held = local._damaged_database(tmp_path)
    assert held, observed
    assert "is damaged" in observed


@pytest.mark.proc  # ocrstack api serve in a subprocess (under unshare)
@pytest.mark.server  # a fake OpenAI server on 127.0.0.1
def test_the_disk_full_case_holds_on_a_real_full_file_system(tmp_path: Path) -> None:
    """A 4 MiB tmpfs data dir filled by uploads: 507 with a fix, /ready 503 while full, /health
    answered, and DELETEs free the space (files before the record) so a new job finishes."""
    from ocrstack.api.security import diskfull

    why = diskfull.unavailable()
    if why is not None:
        pytest.skip(why)
    table = Table()
    diskfull.run(table, tmp_path)
    (row,) = table.rows
    assert row.held, row.observed
    assert "answered 507" in row.observed and "while full 503" in row.observed
