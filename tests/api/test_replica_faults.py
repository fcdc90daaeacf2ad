"""The replica fault table (``ocrstack api replicas``, ``nox -s load``; issue 23): a small real run
(2 replicas x 6 jobs on the session's PostgreSQL) and the counting rules on made-up records."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from ocrstack.api import faultcount as fc


@pytest.mark.server
@pytest.mark.slow
def test_two_replicas_six_jobs_keep_every_invariant(pg_cluster, tmp_path: Path) -> None:
    from ocrstack.api import outbox, replicaload

    opts = replicaload.ReplicaLoadOptions(replicas=(2,), jobs=6, pages=3, workdir=tmp_path)
    table = replicaload.run(opts, pg_cluster)
    (row,) = table.rows
    assert row.killed and row.db_restarted  # both faults happened mid-run
    assert (row.completed, row.pages_lost, row.recomputed, row.duplicates) == (6, 0, 0, 0), table.table()
    assert row.callbacks == 6 and row.callback_repeats <= outbox.SENDERS, table.table()
    assert row.agreed, table.table()
    assert row.extra["page_runs"] >= 18 and row.extra["bad_signatures"] == 0
    assert row.extra["polls"] > 0 and math.isfinite(row.status_p99_ms)  # measured; its target is the table's
    logs = sorted((tmp_path / "replicas-2").glob("replica*.log"))
    assert len(logs) == 2 and all("worker " in log.read_text() for log in logs)
    assert json.loads(table.to_json())["rows"][0]["replicas"] == 2


def test_a_finished_page_computed_again_counts() -> None:
    runs = [("j", 0, "a", 1.0), ("j", 0, "b", 5.0), ("j", 1, "a", 2.0)]
    assert fc.recomputed(runs, killed=None, cached_at_kill=set()) == 1
    # the first run was on the killed replica, but the page was cached when it died: still counts
    assert fc.recomputed(runs, killed="a", cached_at_kill={("j", 0)}) == 1


def test_a_page_in_flight_on_the_killed_replica_may_run_again() -> None:
    runs = [("j", 0, "a", 1.0), ("j", 0, "b", 5.0)]
    assert fc.recomputed(runs, killed="a", cached_at_kill=set()) == 0
    assert fc.recomputed([*runs, ("j", 0, "c", 9.0)], killed="a", cached_at_kill=set()) == 1


def test_a_result_recorded_twice_is_a_duplicate(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("x INFO job j1 done in 1.20 s\nx INFO job j2 done in 0.50 s\n")
    (tmp_path / "b.log").write_text("x INFO job j1 done in 0.90 s\nx INFO job j3 failed in 0.1 s\n")
    logged = fc.finishes([tmp_path / "a.log", tmp_path / "b.log"])
    assert logged == Counter({"j1": 2, "j2": 1, "j3": 1})
    assert fc.duplicates(["j1", "j2", "j3"], logged) == 1
    assert fc.repeats(["j1", "j2"], Counter({"j2": 3, "j1": 1})) == 2  # a callback received 3 times


def test_pages_missing_from_a_result_are_lost(tmp_path: Path) -> None:
    out = tmp_path / "jobs" / "j1" / "out"
    out.mkdir(parents=True)
    (out / "doc.blocks.json").write_text(json.dumps({"pages": [{}, {}]}))
    assert fc.pages_lost(tmp_path, {"j1": "done"}, pages=3) == 1
    assert fc.pages_lost(tmp_path, {"j1": "done", "j2": "failed"}, pages=3) == 4


@pytest.mark.server
def test_the_receiver_counts_only_valid_signatures() -> None:
    import secrets

    from ocrstack.api import webhooks

    secret = secrets.token_hex(8)
    with fc.Receiver(secret) as rx:
        assert webhooks.deliver(rx.url, {"id": "j1"}, secret, attempts=1)["state"] == "delivered"
        assert webhooks.deliver(rx.url, {"id": "j1"}, "wrong", attempts=1)["state"] == "failed"
    assert rx.deliveries == Counter({"j1": 1}) and rx.invalid == 1
