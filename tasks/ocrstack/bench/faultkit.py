"""Pieces shared by the fault-run scenarios (:mod:`ocrstack.bench.faults`,
:mod:`ocrstack.bench.interrupts`): the row, generated inputs, the CLI as a child process, and
how pages lost and re-sent requests are counted (column meanings: :mod:`ocrstack.bench.faults`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ocrstack.testing.fake_openai import FakeOpenAIServer


@dataclass
class FaultRow:
    """One scenario's outcome (see the module docstring for the columns)."""

    scenario: str
    requests: int
    retries: int
    pages_lost: int
    exit_code: str
    seconds: float = 0.0


def make_tiff(path: Path, pages: int) -> Path:
    """A ``pages``-frame greyscale TIFF, each frame 400 x 300 px with its own drawn text (so every
    page sends a different image)."""
    from PIL import Image, ImageDraw

    frames = []
    for n in range(pages):
        im = Image.new("L", (400, 300), 255)
        ImageDraw.Draw(im).text((20, 20 + 8 * n), f"page {n + 1}: the quick brown fox", fill=0)
        frames.append(im)
    frames[0].save(path, format="TIFF", save_all=True, append_images=frames[1:])
    return path


def run_cli(
    inputs: list[Path], out: Path, urls: list[str], *extra: str, timeout: float = 300
) -> tuple[int, str]:
    """``ocrstack parse INPUTS --recognizer openai --layout none --server-url ... -o OUT`` as a child
    process of this interpreter (``python -m ocrstack``); returns (exit code, stderr)."""
    args = ["parse", *map(str, inputs), "--recognizer", "openai", "--layout", "none", "--no-progress"]
    for url in urls:
        args += ["--server-url", url]
    done = subprocess.run(
        [sys.executable, "-m", "ocrstack", *args, *extra, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stderr


def block_requests(servers: list[FakeOpenAIServer]) -> list[Any]:
    """Recorded block requests (``max_tokens`` > 1: not probes) of ``servers``."""
    return [r for s in servers for r in s.requests if int(r.body.get("max_tokens") or 2) > 1]


def pages_lost(blocks_json: Path, pages: int) -> int:
    """Pages without every block read (text and no ``failed`` status) in ``blocks_json``."""
    if not blocks_json.is_file():
        return pages
    data = json.loads(blocks_json.read_text(encoding="utf-8"))
    good = 0
    for page in data.get("pages", []):
        blocks = page.get("blocks", [])
        if (
            not page.get("error")
            and blocks
            and all(b.get("text") and b.get("status") != "failed" for b in blocks)
        ):
            good += 1
    return pages - good


def resent(stderr: str) -> int:
    """Requests re-sent after a fault, from the recognizer's ``server faults: ...`` line(s)."""
    return sum(int(n) for n in re.findall(r"(\d+) request\(s\) re-sent", stderr))


def format_table(rows: list[FaultRow]) -> str:
    """``scenario | requests | retries | pages lost | exit code`` as a Markdown table."""
    lines = [
        "| scenario | requests | retries | pages lost | exit code | seconds |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.scenario} | {r.requests} | {r.retries} | {r.pages_lost} | {r.exit_code} | {r.seconds:.1f} |"
        for r in rows
    ]
    return "\n".join(lines)
