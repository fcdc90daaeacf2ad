"""Advisory lock per output document (issue 10 problem 5 of the report, item 4 of the work):
two runs into the same -o never work on the same document at once. The other run is a real
second process holding the document's lock (:func:`ocrstack.parsing.run.doclock.hold`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from PIL import Image
from tests.parsing.run.test_batch import _partial, _run

from ocrstack.core.errors import InputError, OutputLocked, ServerRejected
from ocrstack.parsing import outputs
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import doclock, pipeline
from support.wait import wait_until

HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from ocrstack.parsing import outputs
    from ocrstack.parsing.run import doclock
    paths = outputs.OutputPaths(Path(sys.argv[1]), sys.argv[2])
    with doclock.hold(paths, 0, print):
        print("held", flush=True)
        sys.stdin.read()  # until the test closes our stdin (or kills us)
    """
)


def _hold(out: Path, name: str) -> subprocess.Popen:
    """A second process holding ``name``'s lock in ``out`` until its stdin is closed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out), name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _image(path: Path) -> Path:
    Image.new("RGB", (120, 90), "white").save(path)
    return path


@pytest.mark.proc
def test_a_held_document_is_refused_with_the_holder_pid(tmp_path: Path):
    a = _image(tmp_path / "a.png")
    out = tmp_path / "out"
    holder = _hold(out, "a")
    try:
        with pytest.raises(OutputLocked) as err:
            _run(ParseOptions(inputs=(a,), output=out, lock_timeout=0.3))
        assert err.value.exit_code == 2 and f"pid {holder.pid}" in str(err.value)
        assert "--lock-timeout" in str(err.value) and not (out / "a.md").exists()
        # with another input: only the held document fails, the other is written
        b = _image(tmp_path / "b.png")
        lines: list[str] = []
        summary, _ = _run(ParseOptions(inputs=(a, b), output=out, lock_timeout=0), lines)
        _partial(summary, "1 ok, 0 partial, 1 failed")
        assert (out / "b.md").is_file() and not (out / "a.md").exists()
        (line,) = [s for s in lines if s.startswith(f"FAILED {a}: ")]
        assert f"a.md is being written by another ocrstack run (pid {holder.pid}" in line, line
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.proc
def test_the_second_run_waits_then_parses(tmp_path: Path):
    a = _image(tmp_path / "a.png")
    out = tmp_path / "out"
    holder = _hold(out, "a")
    lines: list[str] = []
    result: list = []
    runner = threading.Thread(
        target=lambda: result.append(_run(ParseOptions(inputs=(a,), output=out, lock_timeout=60), lines))
    )
    runner.start()
    try:
        wait_until(lambda: any("waiting" in s for s in lines), "the second run to say it is waiting")
        assert not (out / "a.md").exists()  # nothing written while the holder has the lock
    finally:
        holder.stdin.close()  # the holder leaves its lock
        holder.wait()
        runner.join(timeout=120)
    assert not runner.is_alive() and result, "the second run did not finish after the holder left"
    summary, _ = result[0]
    said = f"held by another ocrstack run (pid {holder.pid}"
    assert any(said in s and "waiting" in s for s in lines), lines
    assert summary.documents[0].status == "ok" and (out / "a.md").is_file()


@pytest.mark.proc
def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path):
    """flock dies with its process: a SIGKILLed run does not block the next one. Its holder
    record stays behind (nothing ran to remove it), is seen as stale, and the next run removes it."""
    a = _image(tmp_path / "a.png")
    out = tmp_path / "out"
    paths = outputs.OutputPaths(out, "a")
    holder = _hold(out, "a")
    assert doclock.holder(paths)["pid"] == holder.pid  # alive: named
    holder.kill()
    holder.wait()
    left = json.loads(doclock.holder_path(paths).read_text())
    assert left["pid"] == holder.pid and doclock.is_stale(left)
    assert doclock.holder(paths) == {}  # a dead pid is never named as the holder
    summary, _ = _run(ParseOptions(inputs=(a,), output=out, lock_timeout=0))
    assert summary.documents[0].status == "ok"
    assert _records(out) == []


@pytest.mark.proc
def test_a_stale_record_does_not_name_a_dead_pid_while_the_lock_is_held(tmp_path: Path):
    """The lock is held by a live run whose record is not written yet, and a killed run's record
    is still there: the refusal names no pid rather than the dead one."""
    a = _image(tmp_path / "a.png")
    out = tmp_path / "out"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = _hold(out, "a")
    try:
        record = doclock.holder_path(outputs.OutputPaths(out, "a"))
        record.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "since": "earlier"}))
        with pytest.raises(OutputLocked) as err:
            _run(ParseOptions(inputs=(a,), output=out, lock_timeout=0))
        assert "being written by another ocrstack run --" in str(err.value), str(err.value)
        assert f"pid {dead.pid}" not in str(err.value)
    finally:
        live.kill()
        live.wait()


def _records(out: Path) -> list[str]:
    return sorted(p.name for p in doclock.lock_dir(out).glob("*.holder.json"))


def test_no_holder_record_remains_after_a_run(tmp_path: Path):
    """A finished run leaves no NAME.holder.json that a later run or a user would read as a holder."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _image(docs / "a.png")
    Image.new("RGB", (100, 80), "white").save(docs / "b.png")
    out = tmp_path / "out"
    summary, _ = _run(ParseOptions(inputs=(docs,), output=out))
    assert [d.status for d in summary.documents] == ["ok", "ok"]
    assert _records(out) == []
    assert {p.suffix for p in doclock.lock_dir(out).iterdir()} <= {".lock"}  # at most the empty lock files


def test_no_holder_record_remains_after_a_failed_document(tmp_path: Path, monkeypatch):
    """A document that fails under its lock (here: unreadable while parsing) or a run stopped by
    a fatal error removes its record too; while the lock is held, the record names this process."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _image(docs / "a.png")
    Image.new("RGB", (100, 80), "white").save(docs / "b.png")
    out = tmp_path / "out"
    seen: list[dict] = []
    real = pipeline._run_document

    def fails_a(parser, source, paths, *rest):
        seen.append(doclock.holder(paths))
        if source.name == "a.png":
            raise InputError(f"{source}: cannot be read", "check the file")
        return real(parser, source, paths, *rest)

    monkeypatch.setattr(pipeline, "_run_document", fails_a)
    summary, _ = _run(ParseOptions(inputs=(docs,), output=out))
    _partial(summary, "1 ok, 0 partial, 1 failed")
    assert [r.get("pid") for r in seen] == [os.getpid(), os.getpid()]
    assert _records(out) == []

    def fatal(*_a):
        raise ServerRejected("400 Bad Request", "fix the request", status=400)

    monkeypatch.setattr(pipeline, "_run_document", fatal)
    with pytest.raises(ServerRejected):
        _run(ParseOptions(inputs=(docs,), output=out, force=True))
    assert _records(out) == []


def test_is_stale_only_for_a_gone_process_of_this_host():
    host = socket.gethostname()
    assert not doclock.is_stale({"pid": os.getpid(), "host": host})
    assert not doclock.is_stale({"pid": 1, "host": host})  # init: alive (EPERM or not)
    assert not doclock.is_stale({"pid": 2**22 + 12345, "host": f"not-{host}"})  # cannot check another host
    assert doclock.is_stale({"pid": 2**22 + 12345, "host": host})  # beyond pid_max: no such process
    assert doclock.is_stale({"host": host}) and doclock.is_stale({"pid": "12", "host": host})


def test_lock_timeout_is_a_declared_option():
    from ocrstack import cli

    args = cli.build_parser().parse_args(["parse", "a.pdf", "--lock-timeout", "0"])
    assert float(args.lock_timeout) == 0
    assert pipeline.run.__doc__ and "--lock-timeout" in pipeline.run.__doc__
