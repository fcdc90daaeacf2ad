"""Score candidate Markdown on the olmOCR-Bench sample with the ``olmocr`` package's own scorer
(issue 22, "Done when" 1). Nothing of the scorer is copied: the tests are loaded by
``olmocr.bench.tests.load_tests`` and run by ``olmocr.bench.benchmark.evaluate_candidate``; this
module only adds one ``baseline`` test on page 1 of every PDF that has none, as
``olmocr.bench.benchmark``'s ``main`` does, and counts passes per test type.

Math tests render LaTeX with KaTeX in a browser (Playwright); ``load_tests`` starts the browser
while loading them, so they are loaded only when ``math=True`` and otherwise reported as not run.
Playwright's own browser download is not reachable everywhere; a Chromium of the system (Debian's
``chromium``; ``$OCRSTACK_CHROMIUM`` names another) is given to Playwright's ``launch`` instead
(:func:`use_system_chromium`).

Run as ``python -m ocrstack.bench.olmocr_score SAMPLE CANDIDATES [--math]`` in an environment with
``olmocr`` (0.4.27, ``envs/olmocr.txt``); it imports nothing else of ocrstack, so
``PYTHONPATH=tasks`` beside that environment is enough. Prints JSON: ``{candidate: {type:
[passed, total]}}`` plus ``"dataset"`` (non-baseline tests of ``dataset.jsonl``) and ``"blank"``
(``blanks.jsonl``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Where a system Chromium's real binary lives (Debian's /usr/bin/chromium is a shell wrapper).
CHROMIUM = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome")


def system_chromium() -> str | None:
    """``$OCRSTACK_CHROMIUM``, else the first of :data:`CHROMIUM` found (a path or on ``PATH``), or None."""
    for name in (os.environ.get("OCRSTACK_CHROMIUM"), *CHROMIUM):
        found = name and (name if os.access(name, os.X_OK) else shutil.which(name))
        if found:
            return found
    return None


def use_system_chromium() -> str | None:
    """Make Playwright's ``chromium.launch()`` (which olmocr's KaTeX renderer calls without
    arguments) start :func:`system_chromium` when Playwright has no browser of its own installed;
    returns the executable given, or None (Playwright's own, or none found: the math tests then
    fail to load with Playwright's own message)."""
    from playwright.sync_api import BrowserType, sync_playwright

    with sync_playwright() as p:
        if Path(p.chromium.executable_path).exists():
            return None
    exe = system_chromium()
    if exe is not None:
        BrowserType.launch = functools.partialmethod(BrowserType.launch, executable_path=exe)
    return exe


def _load(sample: Path, math: bool) -> tuple[list[Any], dict[str, str]]:
    from olmocr.bench.tests import BaselineTest, load_tests

    tests: list[Any] = []
    source: dict[str, str] = {}
    for jsonl in sorted(sample.glob("*.jsonl")):
        lines = [ln for ln in jsonl.read_text(encoding="utf-8").splitlines() if ln.strip()]
        if not math:
            lines = [ln for ln in lines if json.loads(ln).get("type") != "math"]
        with tempfile.TemporaryDirectory() as tmp:
            kept = Path(tmp) / jsonl.name
            kept.write_text("\n".join(lines) + "\n", encoding="utf-8")
            for t in load_tests(str(kept)):
                tests.append(t)
                source[t.id] = jsonl.stem
    for pdf in _pdfs(sample):
        if not any(t.type == "baseline" for t in tests if t.pdf == pdf):
            tests.append(BaselineTest(id=f"{pdf}_baseline", pdf=pdf, page=1, type="baseline"))
            source[tests[-1].id] = "baseline"
    return tests, source


def _pdfs(sample: Path) -> list[str]:
    root = sample / "pdfs"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.pdf"))


def score(sample: Path, candidates: Path, math: bool = False) -> dict[str, dict[str, list[int]]]:
    """Pass counts per test type of every candidate folder under ``candidates`` (each holding
    ``<pdf stem>_pg<page>_repeat1.md`` files, sub-folders as in ``pdfs/``).

    Returns ``{candidate: {"present": [passed, total], ..., "dataset": [...], "blank": [...]}}``;
    a candidate with missing pages gets ``{"error": [0, 0]}`` and its messages on stderr.
    """
    from olmocr.bench.benchmark import evaluate_candidate

    tests, source = _load(sample, math)
    out: dict[str, dict[str, list[int]]] = {}
    for folder in sorted(p for p in candidates.iterdir() if p.is_dir()):
        *_, errors, _, _, _, results = evaluate_candidate(str(folder), tests, _pdfs(sample))
        if errors:
            print("\n".join(errors), file=sys.stderr)
            out[folder.name] = {"error": [0, 0]}
            continue
        counts: dict[str, list[int]] = {}
        for pages in results.values():
            for rows in pages.values():
                for test, passed, _ in rows:
                    keys = [test.type]
                    if source[test.id] == "dataset":
                        keys.append("dataset")
                    elif source[test.id] == "blanks":
                        keys.append("blank")
                    for key in keys:
                        c = counts.setdefault(key, [0, 0])
                        c[0] += int(bool(passed))
                        c[1] += 1
        out[folder.name] = counts
    return out


def main(argv: list[str]) -> int:
    """Entry point: ``SAMPLE CANDIDATES [--math]``; prints :func:`score`'s result as JSON."""
    math = "--math" in argv
    args = [a for a in argv if a != "--math"]
    if math and (exe := use_system_chromium()) is not None:
        print(f"math tests: Playwright launches {exe}", file=sys.stderr)
    with contextlib.redirect_stdout(sys.stderr):  # olmocr prints as it goes: stdout is the JSON
        result = score(Path(args[0]), Path(args[1]), math)
    print(json.dumps(result), flush=True)
    sys.stdout = sys.stderr  # and its browser's clean-up prints at exit
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
