"""Fault-run rows for interrupted runs (issue 10): ``Ctrl-C mid-page`` and ``SIGKILL mid-batch
then rerun``, in the row format of :mod:`ocrstack.bench.faults` (``scenario | requests |
retries | pages lost | exit code``), added to its :data:`~ocrstack.bench.faults.SCENARIOS`.

Both run the real CLI as a child process (``python -m ocrstack parse --recognizer openai
--layout none --concurrency 1``) on generated multi-frame TIFFs against a
:class:`~ocrstack.testing.fake_openai.FakeOpenAIServer` on 127.0.0.1 whose every block request
takes :data:`PAGE_SECONDS` (a heavy page on a real server), then rerun the same command:

* ``Ctrl-C mid-page``: SIGINT once page 1 is in the page cache and page 2 is in flight;
  ``stop_seconds`` is the time from SIGINT to exit (target 2 s; before issue 10 the run waited
  for the page in flight). Exit codes ``130 -> 0``.
* ``SIGKILL mid-batch then rerun``: three documents; SIGKILL once the first is written and the
  second has a page cached. Exit codes ``-9 -> 0``; the rerun reports the first up to date.

``requests`` counts the server's chat requests over both runs (probes included): finished work
is not asked again, so it is pages + probes + the one request in flight when the run stopped.
``pages lost``: pages without text after the rerun (:func:`ocrstack.bench.faultkit.pages_lost`).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from ocrstack.bench.faultkit import FaultRow, format_table, make_tiff, pages_lost, resent, run_cli
from ocrstack.testing.fake_openai import FakeOpenAIServer

#: Seconds each block request takes on the fake server (one block per page with --layout none).
PAGE_SECONDS = 3.0


def _start(inputs: list[Path], out: Path, url: str) -> subprocess.Popen:
    args = ["parse", *map(str, inputs), "--recognizer", "openai", "--layout", "none", "--no-progress"]
    args += ["--server-url", url, "--concurrency", "1", "-o", str(out)]
    return subprocess.Popen(
        [sys.executable, "-m", "ocrstack", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,  # no threads are started before it
    )


def sigint_default() -> None:
    """In the child before exec: SIGINT back to its default action. A run started in the
    background by a non-interactive shell (``nohup cmd &``, some CI runners) inherits SIGINT
    ignored, and a Ctrl-C scenario would then measure nothing (the CLI rightly keeps an
    ignored SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait(condition, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the parse ended or stalled before the fault point: {proc.communicate()[1]}")
        time.sleep(0.02)


def _tiff(path: Path, pages: int, title: str) -> Path:
    """Like :func:`ocrstack.bench.faultkit.make_tiff`, with ``title`` drawn on every page (so the
    documents of a batch differ: equal files would share their page cache)."""
    from PIL import Image, ImageDraw

    frames = []
    for n in range(pages):
        im = Image.new("L", (400, 300), 255)
        ImageDraw.Draw(im).text((20, 20 + 8 * n), f"{title}, page {n + 1}: the quick brown fox", fill=0)
        frames.append(im)
    frames[0].save(path, format="TIFF", save_all=True, append_images=frames[1:])
    return path


def _cached(out: Path, page: int) -> bool:
    return any((out / ".ocrstack-cache").glob(f"*/p{page:04d}-*.json"))


def ctrl_c(work: Path, pages: int = 3) -> FaultRow:
    """SIGINT while page 2 of ``pages`` is in flight (page 1 cached), then the same command."""
    doc = make_tiff(work / "ctrlc.tiff", pages)
    out = work / "out-ctrlc"
    start = time.monotonic()
    with FakeOpenAIServer(latency=PAGE_SECONDS, probe_latency=0.01) as srv:
        proc = _start([doc], out, srv.url)
        _wait(lambda: _cached(out, 1), proc)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        stop = time.monotonic() - sent
        second, err2 = run_cli([doc], out, [srv.url], "--concurrency", "1")
        total = srv.chat_count
    lost = pages_lost(out / "ctrlc.blocks.json", pages)
    row = FaultRow(
        "Ctrl-C mid-page (+ rerun)", total, resent(err + err2), lost, f"{proc.returncode} -> {second}"
    )
    row.seconds = time.monotonic() - start
    row.stop_seconds = stop  # type: ignore[attr-defined]
    return row


def sigkill_batch(work: Path, docs: int = 3, pages: int = 2) -> FaultRow:
    """SIGKILL after document 1 of ``docs`` is written and document 2 has a page cached; rerun."""
    folder = work / "batch"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(docs):
        _tiff(folder / f"d{n + 1}.tiff", pages, f"document {n + 1}")
    out = work / "out-kill"
    start = time.monotonic()
    with FakeOpenAIServer(latency=PAGE_SECONDS / 3, probe_latency=0.01) as srv:
        proc = _start([folder], out, srv.url)
        _wait(
            lambda: (
                (out / "d1.md").is_file() and len(list((out / ".ocrstack-cache").glob("*/p*.json"))) > pages
            ),
            proc,
        )
        proc.kill()
        _, err = proc.communicate(timeout=60)
        second, err2 = run_cli([folder], out, [srv.url], "--concurrency", "1")
        total = srv.chat_count
    lost = sum(pages_lost(out / f"d{n + 1}.blocks.json", pages) for n in range(docs))
    row = FaultRow(
        "SIGKILL mid-batch then rerun", total, resent(err + err2), lost, f"{proc.returncode} -> {second}"
    )
    row.seconds = time.monotonic() - start
    row.up_to_date = "d1.md: up to date" in err2  # type: ignore[attr-defined]
    return row


#: Added to :data:`ocrstack.bench.faults.SCENARIOS` (table order).
SCENARIOS = {"ctrl-c": ctrl_c, "sigkill": sigkill_batch}


def main() -> int:
    """Print both rows (and the time to stop after Ctrl-C) for a temporary work directory."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ocrstack-interrupts-") as tmp:
        rows = [f(Path(tmp)) for f in SCENARIOS.values()]
    print(format_table(rows))
    print(f"Ctrl-C: stopped {rows[0].stop_seconds:.2f} s after SIGINT")  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
