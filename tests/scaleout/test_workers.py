"""The page actor's run bookkeeping in-process (no Ray): one Parser per run over shared engines,
server-backed engines made per run, the idle limit (:mod:`ocrstack.scaleout.workers`)."""

from __future__ import annotations

import threading
from pathlib import Path

from ocrstack.parsing.options import ParseOptions
from ocrstack.scaleout.workers import PageWorker, Run
from support.wait import wait_until


def _options(out: Path, **kw) -> ParseOptions:
    return ParseOptions(
        inputs=(), output=out, layout="none", recognizer="openai", server_urls=("http://127.0.0.1:9",),
        model="fake", **kw,
    )  # fmt: skip


def test_each_run_gets_its_parser_over_the_shared_in_process_engine(tmp_path: Path) -> None:
    worker = PageWorker(_options(tmp_path / "first"))
    a = Run("a", _options(tmp_path / "a", dpi=150))
    b = Run("b", _options(tmp_path / "b", dpi=100, cache_dir=tmp_path / "shared-cache"))
    assert worker.begin(a, recognizer=False)["runs"] == 0
    assert worker.begin(b, recognizer=False)["runs"] == 1
    pa, pb = worker._parser(a), worker._parser(b)
    assert (pa.options.dpi, pb.options.dpi) == (150, 100)
    # the in-process layout ("none") is the actor's; the server-backed recognizer is the run's,
    # with the run's answer cache (-o, or --cache-dir)
    assert pa.layout is pb.layout is worker.engines.layout
    assert pa.recognizer is not pb.recognizer
    assert pa.recognizer.answers.dir.parent == tmp_path / "a" / ".ocrstack-cache"
    assert pb.recognizer.answers.dir.parent == tmp_path / "shared-cache"
    assert worker._parser(a) is pa  # a second page of the run: the same Parser
    assert worker.end("a") is True and worker.end("a") is False
    assert list(worker._runs) == ["b"]


def test_runs_beyond_the_kept_number_drop_the_oldest(tmp_path: Path, monkeypatch) -> None:
    from ocrstack.scaleout import workers

    monkeypatch.setattr(workers, "KEPT_RUNS", 2)
    worker = PageWorker(_options(tmp_path / "o"))
    for name in ("r1", "r2", "r3"):
        worker._parser(Run(name, _options(tmp_path / name)))
    assert list(worker._runs) == ["r2", "r3"]


def test_an_idle_actor_ends_after_its_ttl(tmp_path: Path) -> None:
    ended = threading.Event()
    worker = PageWorker(_options(tmp_path / "o"), ttl=1.0, on_idle=ended.set)
    worker.begin(Run("a", _options(tmp_path / "a")), recognizer=False)  # a run left open (driver died)
    wait_until(ended.is_set, "the actor ending 1 s after its last call", 10)
    assert worker.idle_seconds() >= 1.0


def test_expire_waits_for_the_open_runs_and_begin_cancels_it(tmp_path: Path) -> None:
    worker = PageWorker(_options(tmp_path / "o"), ttl=3600.0, on_idle=lambda: None)
    run = Run("a", _options(tmp_path / "a"))
    worker.begin(run, recognizer=False)
    worker.expire(0.0)
    assert not worker.expired()  # a run is open here: kept however long its next page takes
    worker.end("a")
    assert worker.expired()
    worker.begin(Run("b", _options(tmp_path / "b")), recognizer=False, ttl=60.0)
    worker.end("b")
    assert worker.ttl == 60.0 and not worker.expired()  # in use again: the run's ttl, no grace
