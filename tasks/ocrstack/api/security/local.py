"""The cases without a running service (:mod:`ocrstack.api.security`): text rules on long letter
runs, a hostile CLI batch, a damaged job database at start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw

from ocrstack.api.security import Table
from ocrstack.testing.fake_openai import FakeOpenAIServer

#: Linear time gives ~10 from 10^5 to 10^6 characters, quadratic ~100; 25 leaves room for noise.
LINEAR_RATIO_MAX = 25.0


def run(table: Table, root: Path) -> None:
    """Add the local cases to ``table``; files under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    table.attempt(
        "text rules on 10^6-letter runs",
        f"time(10^6) / time(10^5) <= {LINEAR_RATIO_MAX:g} (linear)",
        _text_rules_ratio,
    )
    table.attempt(
        "CLI batch: non-UTF-8 name, 240-char name, unpaired surrogate",
        "exit 0, every document written",
        lambda: _hostile_batch(root / "batch"),
    )
    table.attempt(
        "damaged jobs.sqlite3 at start",
        "api serve refuses: exit 9, one line, no traceback",
        lambda: _damaged_database(root / "damaged"),
    )


def _best_of(fn: Callable[[], object], times: int = 3) -> float:
    best = float("inf")
    for _ in range(times):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _text_rules(n: int) -> Callable[[], object]:
    """Every row-joining rule of the assembly (:mod:`ocrstack.parsing.assembly.paragraphs`) and the
    Markdown escaping on runs of ``n`` letters."""
    from ocrstack.parsing.assembly import markdown, paragraphs

    run = "a" * n

    def rules() -> object:
        vocab = paragraphs.Vocabulary.of([run, f"{run}-", f"well-known {run}-b"])
        paragraphs.join_rows(f"x {run}-", "bc next", vocab)
        paragraphs.join_paragraph([run, f"{run}-", run], vocab)
        paragraphs.paragraphs(f"{run}\n\n{run}")
        paragraphs.continues(run, run)
        paragraphs.list_item(run)
        return markdown.escape_text(run)

    return rules


def _text_rules_ratio() -> tuple[str, bool]:
    small, big = _best_of(_text_rules(10**5)), _best_of(_text_rules(10**6))
    ratio = big / max(small, 1e-9)
    return f"{small * 1000:.1f} ms vs {big * 1000:.1f} ms: ratio {ratio:.1f}", ratio <= LINEAR_RATIO_MAX


def _hostile_batch(root: Path) -> tuple[str, bool]:
    """``ocrstack parse`` (a subprocess, the names as bytes) on three documents, one answer with an
    unpaired surrogate (JSON ``"\\ud800"``)."""
    src = os.fsencode(root / "in")
    os.makedirs(src, exist_ok=True)
    names = [b"caf\xe9.png", b"x" * 236 + b".png", b"plain.png"]
    try:
        for name in names:
            page = Image.new("RGB", (120, 60), "white")
            ImageDraw.Draw(page).text((10, 20), "page", fill="black")  # ink: a blank page is not read
            page.save(os.path.join(src, name))
    except OSError as exc:  # a file system that takes only UTF-8 names
        return f"not tried: the file system refuses the names ({exc})", True
    out = root / "out"
    with FakeOpenAIServer(reply=lambda body, size: "left \ud800 right") as srv:
        cmd = [sys.executable.encode(), b"-m", b"ocrstack", b"parse", *(os.path.join(src, n) for n in names),
               b"--recognizer", b"openai", b"--layout", b"none", b"--no-progress",
               b"--server-url", srv.url.encode(), b"-o", os.fsencode(out)]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, timeout=300, check=False)
    written = set(os.listdir(os.fsencode(out))) if os.path.isdir(out) else set()
    missing = [n for n in names if n.rsplit(b".", 1)[0] + b".md" not in written]
    last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1][:120]
    observed = f"exit {done.returncode}, {len(names) - len(missing)}/{len(names)} written ({last})"
    return observed, done.returncode == 0 and not missing


def _damaged_database(root: Path) -> tuple[str, bool]:
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "jobs.sqlite3").write_bytes(b"this is not SQLite" * 500)
    cmd = [sys.executable, "-m", "ocrstack", "api", "serve", "--data-dir", str(data), "--port", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    lines = [x for x in done.stderr.splitlines() if x.startswith("ocrstack: error:")]
    held = done.returncode == 9 and len(lines) == 1 and "Traceback" not in done.stderr
    return f"exit {done.returncode}: {(lines or [done.stderr[-120:]])[0][:140]}", held
