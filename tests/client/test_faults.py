"""Fault tolerance through ``ocrstack parse`` (issue 10 item 3): bursts, poison blocks, a server
restart, warm-up -- each against fake OpenAI servers on 127.0.0.1, bounded in time.

Each of these failed before the breaker/dispatcher rewrite: a 503 burst at ``--concurrency 4``
counted as four faults in a row and aborted (exit 5); a poison block killed the run (exit 5); a
restart failed every queued block; the probe was never retried.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
import time
from pathlib import Path

import pytest

from ocrstack.bench.faults import block_requests, make_tiff
from ocrstack.cli import main
from ocrstack.client import dispatch
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until

pytestmark = [pytest.mark.server]  # fake servers on 127.0.0.1


def run_cli(inputs: list[Path], out: Path, urls: list[str], *extra: str) -> tuple[int, str]:
    """``ocrstack parse ... --recognizer openai --layout none`` in this process: (exit code, stderr)."""
    args = ["parse", *map(str, inputs), "--recognizer", "openai", "--layout", "none", "--no-progress"]
    for url in urls:
        args += ["--server-url", url]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([*args, *extra, "-o", str(out)])
    return code, err.getvalue()


def _blocks(out: Path, name: str) -> list[dict]:
    data = json.loads((out / f"{name}.blocks.json").read_text(encoding="utf-8"))
    return [b | {"page": p["page"]} for p in data["pages"] for b in p["blocks"]]


def _complete(out: Path, name: str) -> bool:
    return bool(json.loads((out / f"{name}.blocks.json").read_text(encoding="utf-8"))["complete"])


def test_a_2s_503_burst_at_concurrency_4_does_not_abort(tmp_path: Path) -> None:
    doc = make_tiff(tmp_path / "doc.tiff", 12)
    # the burst starts while four blocks are generating (0.3 s each): all four fail together
    with FakeOpenAIServer(latency=0.3, burst_after=4, burst_seconds=2.0) as srv:
        code, err = run_cli([doc], tmp_path / "out", [srv.url], "--concurrency", "4")
        failed = srv.chat_count - len([r for r in srv.requests if r.finished])
    assert code == 0, err
    blocks = _blocks(tmp_path / "out", "doc")
    assert len(blocks) == 12 and all(b["text"] and "status" not in b for b in blocks)
    assert failed >= 2  # the burst really hit requests (blocks and re-checks)
    assert "(1 burst(s))" in err  # every failure of the burst counted once


def test_poison_block_is_marked_failed_exit_7_and_a_rerun_retries_only_it(tmp_path: Path) -> None:
    doc = make_tiff(tmp_path / "doc.tiff", 6)
    out = tmp_path / "out"
    with FakeOpenAIServer(latency=0.02, poison_nth=2) as srv:
        code, err = run_cli([doc], out, [srv.url])
        assert code == 7, err
        blocks = _blocks(out, "doc")
        failed = [b for b in blocks if b.get("status") == "failed"]
        assert len(failed) == 1 and "HTTP 500" in failed[0]["error"] and failed[0]["text"] == ""
        assert all(b["text"] for b in blocks if b is not failed[0])  # the other pages were written
        assert not _complete(out, "doc")
        md = (out / "doc.md").read_text(encoding="utf-8")
        page = failed[0]["page"]
        assert f"> **Text missing:** page {page}, block 0 (text)" in md
        assert f"<!-- ocrstack: failed text block: page {page}, block 0:" in md
        assert "1 page(s) with failed blocks" in err

        srv.cure()
        before_blocks, before_all = len(block_requests([srv])), srv.chat_count
        code, err = run_cli([doc], out, [srv.url])
        assert code == 0, err
        assert len(block_requests([srv])) - before_blocks == 1  # only the failed block was sent again
        assert srv.chat_count - before_all == 2  # probe + that block
    assert all(b["text"] and "status" not in b for b in _blocks(out, "doc"))
    assert "Text missing" not in (out / "doc.md").read_text(encoding="utf-8")
    assert _complete(out, "doc")


def test_server_killed_and_restarted_mid_run_continues(tmp_path: Path, monkeypatch) -> None:
    checks: list[bool] = []  # the background checks of the killed server: True = it answered
    real = dispatch.recheck

    def recorded(*args, **kwargs):  # mirrors recheck
        ok, wait = real(*args, **kwargs)
        checks.append(ok)
        return ok, wait

    monkeypatch.setattr(dispatch, "recheck", recorded)
    doc = make_tiff(tmp_path / "doc.tiff", 12)
    first = FakeOpenAIServer(latency=0.1).start()
    port = first.port
    result: list[tuple[int, str]] = []
    runner = threading.Thread(
        target=lambda: result.append(run_cli([doc], tmp_path / "out", [first.url], "--concurrency", "2"))
    )
    runner.start()
    wait_until(lambda: len(block_requests([first])) >= 3, "3 block requests on the first server")
    first.kill()  # requests in flight get no answer, new connections are refused
    # down for 4 faults in a row (the kill + 3 failed checks): where the old client gave up
    wait_until(lambda: checks.count(False) >= 3, "3 failed checks of the killed server", timeout=60)
    second = FakeOpenAIServer(port, latency=0.1).start()
    try:
        runner.join(timeout=60)
        assert not runner.is_alive()
        code, err = result[0]
        assert code == 0, err
        assert len(block_requests([second])) >= 12 - len(block_requests([first]))
        assert "re-sent" in err  # the requests caught by the kill were sent again
        assert f"{first.url} leaves the rotation" in err and f"{first.url} answers again" in err
    finally:
        second.stop()
    assert all(b["text"] for b in _blocks(tmp_path / "out", "doc"))


def test_probe_waits_through_warm_up_503s(tmp_path: Path) -> None:
    doc = make_tiff(tmp_path / "doc.tiff", 2)
    start = time.monotonic()
    with FakeOpenAIServer(warmup_seconds=1.5) as srv:
        code, err = run_cli([doc], tmp_path / "out", [srv.url])
    assert code == 0, err
    assert time.monotonic() - start >= 1.5
    assert f"waiting for {srv.url} to get ready" in err


def test_probe_waits_for_a_server_that_is_not_listening_yet(tmp_path: Path) -> None:
    doc = make_tiff(tmp_path / "doc.tiff", 2)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    servers: list[FakeOpenAIServer] = []
    starter = threading.Timer(1.0, lambda: servers.append(FakeOpenAIServer(port).start()))
    starter.start()
    try:
        code, err = run_cli([doc], tmp_path / "out", [f"http://127.0.0.1:{port}"])
    finally:
        starter.join()
        for srv in servers:
            srv.stop()
    assert code == 0, err
    assert "Connection refused" in err  # it said what it was waiting for


def test_ready_timeout_bounds_the_wait(tmp_path: Path) -> None:
    doc = make_tiff(tmp_path / "doc.tiff", 1)
    with FakeOpenAIServer(warmup_seconds=30) as srv:  # ready after 30 s: a run that waited would pass
        code, err = run_cli([doc], tmp_path / "out", [srv.url], "--ready-timeout", "1")
    assert code == 5
    assert "waited 1 s" in err and "--ready-timeout" in err and "503" in err
