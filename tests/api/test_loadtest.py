"""The load/fault run itself, at a small size (the full run is ``nox -s load``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.api import loadtest

pytestmark = [pytest.mark.server, pytest.mark.slow]


def test_small_run_prints_every_row(tmp_path: Path) -> None:
    opts = loadtest.LoadOptions(jobs=6, rss_small=2, rss_big=6, kill_jobs=2, kill_pages=3, workdir=tmp_path)
    result = loadtest.run(opts)
    table = result.table()
    checks = [r.check for r in result.rows]
    assert checks == [
        "6 concurrent submissions",
        "status p99 while parsing",
        "SIGKILL + restart: jobs completed",
        "SIGKILL + restart: finished pages recomputed",
        "peak RSS after 6 vs 2 jobs",
    ]
    by_check = {r.check: r for r in result.rows}
    assert by_check["6 concurrent submissions"].ok, table
    assert by_check["SIGKILL + restart: jobs completed"].ok, table
    assert by_check["SIGKILL + restart: finished pages recomputed"].ok, table
    assert result.figures["kill_finished_before"] >= 2 and result.figures["kill_recomputed"] == 0
    assert "overall:" in table and (tmp_path / "sigkill.log").read_text().count("READY ") == 2
