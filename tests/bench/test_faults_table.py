"""The scripted fault run of ``ocrstack bench`` (issue 10 "Done when"): every scenario through the
real CLI (a child process) against fake servers on 127.0.0.1 loses no page."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.bench.faults import fault_rows, fault_table, format_table


@pytest.mark.proc
@pytest.mark.slow
def test_fault_table_loses_no_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ocrstack.bench import interrupts

    # pages of 1.5 s, not 3 s: the interrupts still land mid-page (they wait for the page before)
    monkeypatch.setattr(interrupts, "PAGE_SECONDS", 1.5)
    rows = fault_table(tmp_path)
    print("\n" + format_table(rows))
    assert [r.scenario.split(" ")[0] for r in rows] == ["5xx", "poison", "server", "Ctrl-C", "SIGKILL"]
    assert all(r.pages_lost == 0 for r in rows)
    burst, poison, restart, ctrl_c, kill = rows
    assert ctrl_c.exit_code == "130 -> 0"  # how fast it stopped is the bench's verdict (STOP_TARGET)
    assert kill.exit_code == "-9 -> 0" and kill.up_to_date  # the finished document is not redone
    assert burst.exit_code == "0" and burst.retries >= 3  # the four requests of the burst were re-sent
    assert (
        poison.exit_code == "7 -> 0" and poison.retries == 3
    )  # --retries 3, then given up; rerun sends it once
    assert restart.exit_code == "0" and restart.retries >= 1


def test_rows_for_ocrstack_bench_say_meets_for_zero_pages_lost(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from ocrstack.bench import faults

    fake = [
        faults.FaultRow("a", 10, 1, 0, "0"),
        faults.FaultRow("b", 10, 1, 1, "0"),
        faults.FaultRow("c", 10, 1, 0, "5"),
        faults.FaultRow("Ctrl-C in time", 10, 1, 0, "130 -> 0"),
        faults.FaultRow("Ctrl-C late", 10, 1, 0, "130 -> 0"),
    ]
    fake[3].stop_seconds = faults.STOP_TARGET - 0.5  # type: ignore[attr-defined]
    fake[4].stop_seconds = faults.STOP_TARGET + 0.5  # type: ignore[attr-defined]
    monkeypatch.setattr(faults, "fault_table", lambda work: fake)
    rows = fault_rows(None, tmp_path)
    assert [r.verdict for r in rows] == ["meets", "misses", "misses", "meets", "misses"]
    assert "after SIGINT (target 2 s)" in rows[4].detail
