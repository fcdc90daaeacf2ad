"""The cases without a running service (:mod:`ocrstack.api.security`): every text rule on hostile
runs, a hostile CLI batch, a damaged job database at start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PIL import Image, ImageDraw

from ocrstack.api.security import Table
from ocrstack.testing.fake_openai import FakeOpenAIServer

#: time(10^6) / time(10^5) of a linear rule: about 10, up to about 24 for a microsecond rule whose
#: 10^6-character input outgrows the CPU caches; a quadratic rule reads about 100.
LINEAR_RATIO_MAX = 40.0


def run(table: Table, root: Path) -> None:
    """Add the local cases to ``table``; files under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    table.attempt(
        "text rules on hostile 10^6-character runs",
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


def _text_rules_ratio() -> tuple[str, bool]:
    """The rules of :data:`ocrstack.parsing.textrules.RULES` that take milliseconds on every hostile
    shape, best of 3 at 10^5 and 10^6 characters. The rules of
    :data:`~ocrstack.parsing.textrules.SLOW` take seconds per call at 10^6 (linearly), minutes over
    every shape: their 10^6 timings are ``nox -s hostile`` (tests/parsing/test_text_rules_linear.py),
    not this table. Observed: the worst ratio, its rule and shape."""
    from ocrstack.parsing.textrules import RULES, SHAPES, SLOW, best_of

    fast = [(name, rule) for name, rule in RULES if name not in SLOW]
    worst = (0.0, "", "")
    for name, rule in fast:
        for shape, make in SHAPES.items():
            small, big = make(10**5), make(10**6)
            ratio = best_of(rule, big) / max(best_of(rule, small), 1e-6)
            worst = max(worst, (ratio, name, shape))
    ratio, name, shape = worst
    observed = (
        f"{len(fast)} rules x {len(SHAPES)} shapes (the {len(SLOW)} slow ones: nox -s hostile); "
        f"worst ratio {ratio:.1f} ({name}, {shape})"
    )
    return observed, ratio <= LINEAR_RATIO_MAX


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
