"""Advisory lock per output document (issue 10 problem 5 of the report, item 4 of the work):
two runs into the same -o never work on the same document at once. The other run is a real
second process holding the document's lock (:func:`ocrstack.parsing.doclock.hold`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from PIL import Image
from tests.parsing.test_batch import _run

from ocrstack.core.errors import OutputLocked, PartialSuccess
from ocrstack.parsing import pipeline
from ocrstack.parsing.options import ParseOptions

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from ocrstack.parsing import doclock, outputs
    paths = outputs.OutputPaths(Path(sys.argv[1]), sys.argv[2])
    with doclock.hold(paths, 0, print):
        print("held", flush=True)
        time.sleep(float(sys.argv[3]))
    """
)


def _hold(out: Path, name: str, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out), name, str(seconds)], stdout=subprocess.PIPE, text=True
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
    holder = _hold(out, "a", 30)
    try:
        with pytest.raises(OutputLocked) as err:
            _run(ParseOptions(inputs=(a,), output=out, lock_timeout=0.3))
        assert err.value.exit_code == 2 and f"pid {holder.pid}" in str(err.value)
        assert "--lock-timeout" in str(err.value) and not (out / "a.md").exists()
        # with another input: only the held document fails, the other is written
        b = _image(tmp_path / "b.png")
        lines: list[str] = []
        with pytest.raises(PartialSuccess, match="1 ok, 0 partial, 1 failed"):
            _run(ParseOptions(inputs=(a, b), output=out, lock_timeout=0), lines)
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
    holder = _hold(out, "a", 1.5)
    lines: list[str] = []
    start = time.monotonic()
    try:
        summary, _ = _run(ParseOptions(inputs=(a,), output=out, lock_timeout=60), lines)
    finally:
        holder.kill()
        holder.wait()
    assert time.monotonic() - start >= 1.0  # it waited for the holder
    said = f"held by another ocrstack run (pid {holder.pid}"
    assert any(said in s and "waiting" in s for s in lines), lines
    assert summary.documents[0].status == "ok" and (out / "a.md").is_file()


@pytest.mark.proc
def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path):
    """flock dies with its process: a SIGKILLed run does not block the next one."""
    a = _image(tmp_path / "a.png")
    out = tmp_path / "out"
    holder = _hold(out, "a", 60)
    holder.kill()
    holder.wait()
    summary, _ = _run(ParseOptions(inputs=(a,), output=out, lock_timeout=0))
    assert summary.documents[0].status == "ok"


def test_lock_timeout_is_a_declared_option():
    from ocrstack import cli

    args = cli.build_parser().parse_args(["parse", "a.pdf", "--lock-timeout", "0"])
    assert float(args.lock_timeout) == 0
    assert pipeline.run.__doc__ and "--lock-timeout" in pipeline.run.__doc__
