"""Born-digital side-by-side with the tools users pick instead (issue 21 "Done when").

Over the born-digital dev corpus (:func:`ocrstack.bench.textlayer.dev_files`), every tool of
:data:`~ocrstack.bench.peer_child.TOOLS` (ocrstack ``--text-layer auto``, pymupdf4llm default and
legacy mode, markitdown) is run the same way, interleaved file by file so a change of machine
load hits every tool alike:

* a first, untimed round runs every tool once per file: what tools keep on disk between runs (the
  OS page cache; ocrstack's compiled layout model) is in place for all alike, as after any first
  run; ocrstack's first run on a machine (model compiled) is its own row, with an empty cache;
* cold: a fresh process per file (``python -m ocrstack.bench --peer-child TOOL cold``):
  wall seconds from spawn to exit, median over files, and that process's peak RSS (VmHWM);
* warm: one process per tool, loaded and warmed on the first file, all of them alive at once and
  fed the files interleaved file by file as well (:class:`WarmChild`): seconds per page (sum of
  conversion seconds / pages) and each process's peak RSS.

Fidelity is scored the same way for all (:mod:`ocrstack.bench.metrics`, as the issue 11 table):
per document, the tool's Markdown reduced to text (:func:`~ocrstack.bench.metrics.markdown_text`)
against NAME.txt (the PDF's text layer): recall, precision, order; page-weighted means.

Then the memory rows of issue 21: ocrstack's peak RSS on a born-digital parse without OCR (the
largest cold child over the corpus files whose blocks all came from the text layer, :func:`kind`;
target <= :data:`RSS_BORN_DIGITAL_MIB`), and generated
born-digital PDFs of the first and last ``--rss-pages`` counts (10 and 300) parsed cold: peak RSS
and wall seconds per page, the per-page ratio compared with :data:`LINEAR_TARGET`.
The bench reports; it asserts nothing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

from ocrstack.bench import metrics as m
from ocrstack.bench.options import BenchOptions
from ocrstack.bench.peer_child import TOOLS
from ocrstack.bench.results import Row

#: The module each peer imports (the ``bench`` extra installs them; the dev environment does not).
PEER_MODULES = {"pymupdf4llm": "pymupdf4llm", "pymupdf4llm-legacy": "pymupdf4llm", "markitdown": "markitdown"}
#: How to get the peers.
BENCH_INSTALL = "scripts/bootstrap bench, or nox -s bench"

#: Issue 21 targets: ocrstack cold s/file <= 1.0x pymupdf4llm default's, warm s/page <= 1.0x
#: pymupdf4llm legacy's; born-digital peak RSS <= 250 MiB; 300-page vs 10-page <= 1.3x.
COLD_PEER, WARM_PEER = "pymupdf4llm", "pymupdf4llm-legacy"
RSS_BORN_DIGITAL_MIB, LINEAR_TARGET = 250.0, 1.3
#: Files of the quick run (smoke run of every column).
QUICK_FILES = ("en_single_libtasn1_intro",)
#: Seconds one child may take (a 300-page parse on a loaded 2-core machine included).
CHILD_TIMEOUT = 1800


@dataclass
class Tool:
    """One tool's measurements: per file cold wall seconds and peak RSS; warm totals; scores."""

    cold_s: list[float] = field(default_factory=list)
    cold_rss_kib: list[int] = field(default_factory=list)
    warm_s: float = 0.0
    warm_rss_kib: int = 0
    pages: int = 0
    scores: list[tuple[int, float, float, float]] = field(default_factory=list)  # pages, r, p, o
    error: str = ""
    #: ocrstack only, per file: "plain" (no layout model, no OCR block), "layout" (the layout
    #: model ran, no OCR block) or "ocr" (some block read by OCR); see :func:`kind`
    kinds: list[str] = field(default_factory=list)
    #: ocrstack only: (file, peak RSS KiB, wall s) of its first run on a machine (empty model cache)
    first_run: tuple[str, int, float] | None = None

    def mean(self, k: int) -> float:
        """Page-weighted mean of score ``k`` (1 recall, 2 precision, 3 order)."""
        n = sum(s[0] for s in self.scores)
        return sum(s[0] * s[k] for s in self.scores) / n if n else 0.0

    def warm_s_per_page(self) -> float:
        return self.warm_s / self.pages if self.pages else 0.0


def child(tool: str, mode: str, out: Path, files: list[Path], env: dict | None = None) -> tuple[dict, float]:
    """Run one ``--peer-child`` (``env``: variables set on top of this process's); return (its
    JSON line, wall seconds spawn to exit).

    Raises:
        RuntimeError: the child failed (its stderr tail in the message).
    """
    argv = [sys.executable, "-m", "ocrstack.bench", "--peer-child", tool, mode, str(out), *map(str, files)]
    t = time.perf_counter()
    environ = None if env is None else {**os.environ, **env}
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False, env=environ)
    wall = time.perf_counter() - t
    lines = cp.stdout.strip().splitlines()
    if cp.returncode != 0 or not lines or not lines[-1].startswith("{"):
        raise RuntimeError(f"{tool} {mode} exited {cp.returncode}: {cp.stderr.strip()[-300:]}")
    return json.loads(lines[-1]), wall


class WarmChild:
    """A ``--peer-child TOOL warm`` process (:mod:`ocrstack.bench.peer_child`): started, loaded and
    warmed on ``first`` (:meth:`start` returns once it says ready); :meth:`convert` sends it one
    PDF and returns its conversion seconds; :meth:`close` ends it and returns its last JSON line
    (``maxrss_kib``). A child that exits early, or outlives :data:`CHILD_TIMEOUT` (it is killed),
    raises RuntimeError."""

    def __init__(self, tool: str, out: Path, first: Path) -> None:
        argv = [sys.executable, "-m", "ocrstack.bench", "--peer-child", tool, "warm", str(out), str(first)]
        self.tool = tool
        out.mkdir(parents=True, exist_ok=True)
        self.log = out / "stderr.log"  # a file: a pipe nobody reads until the end could fill up
        with self.log.open("w", encoding="utf-8") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
            )
        self._timer = threading.Timer(CHILD_TIMEOUT, self.proc.kill)
        self._timer.daemon = True
        self._timer.start()

    def _answer(self, key: str) -> dict:
        """The next JSON line of the child's stdout that has ``key`` (other lines are the tool's)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                try:
                    answer = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if key in answer:
                    return answer
        self.proc.wait()
        err = self.log.read_text(encoding="utf-8", errors="replace")
        raise RuntimeError(f"{self.tool} warm exited {self.proc.returncode}: {err.strip()[-300:]}")

    def start(self) -> WarmChild:
        self._answer("ready")
        return self

    def convert(self, pdf: Path) -> float:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(f"{pdf}\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the child is gone: _answer says why
        return float(self._answer("pdf")["seconds"])

    def close(self) -> dict:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            return self._answer("maxrss_kib")
        finally:
            self._timer.cancel()
            try:
                self.proc.wait(timeout=60)  # it exits after its last line
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def score(pdf: Path, markdown: Path) -> tuple[float, float, float]:
    """(recall, precision, order) of ``markdown`` against ``pdf``'s NAME.txt (whole document)."""
    truth = pdf.with_suffix(".txt").read_text(encoding="utf-8").replace("\f", "\n")
    text = m.markdown_text(markdown.read_text(encoding="utf-8")) if markdown.is_file() else ""
    found, total = m.word_hits(text, truth)
    return m.word_recall(truth, text), (found / total if total else 1.0), m.sequence_similarity(truth, text)


def kind(blocks_json: Path) -> str:
    """What an ocrstack parse needed, from its blocks.json: ``ocr`` when a block's source is not
    the text layer, else ``layout`` when the layout model was loaded, else ``plain``."""
    doc = json.loads(blocks_json.read_text(encoding="utf-8"))
    if any(b.get("source") != "text-layer" for p in doc["pages"] for b in p["blocks"]):
        return "ocr"
    return "plain" if doc["model"].get("layout_runtime") == "not loaded" else "layout"


def measure(files: list[Path], work: Path) -> dict[str, Tool]:
    """``{tool: Tool}`` for :data:`TOOLS` over ``files`` (see module docstring)."""
    from ocrstack.parsing.documents import count_pages

    pages = {f: count_pages(f) for f in files}
    tools = {t: Tool() for t in TOOLS}
    for name, tool in tools.items():  # a peer the environment lacks: its row says why, up front
        module = PEER_MODULES.get(name)
        if module is not None and importlib.util.find_spec(module) is None:
            tool.error = f"{module} is not installed: it comes with the bench extra ({BENCH_INSTALL})"
    for f in files:  # the untimed first round: each tool's caches on disk filled, as after any run
        for name, tool in tools.items():
            if not tool.error:
                try:
                    child(name, "cold", work / "first" / name, [f])
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    tool.error = str(exc)
    for f in files:  # interleaved: file by file, every tool
        for name, tool in tools.items():
            if tool.error:
                continue
            out = work / "cold" / name
            try:
                res, wall = child(name, "cold", out, [f])
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                tool.error = str(exc)
                continue
            tool.cold_s.append(wall)
            tool.cold_rss_kib.append(res["maxrss_kib"])
            tool.scores.append((pages[f], *score(f, out / f"{f.stem}.md")))
            if name == "ocrstack":
                tool.kinds.append(kind(out / f"{f.stem}.blocks.json"))
    _first_run(tools["ocrstack"], files, work)
    warm: dict[str, WarmChild] = {}
    try:
        for name, tool in tools.items():  # loaded one after another, before any timed file
            if not tool.error:
                try:
                    warm[name] = WarmChild(name, work / "warm" / name, files[0]).start()
                except RuntimeError as exc:
                    tool.error = str(exc)
        for f in files:  # interleaved: file by file, every tool
            for name, w in list(warm.items()):
                try:
                    tools[name].warm_s += w.convert(f)
                except RuntimeError as exc:
                    tools[name].error = str(exc)
                    del warm[name]
        for name, w in list(warm.items()):
            try:
                tools[name].warm_rss_kib = w.close()["maxrss_kib"]
                tools[name].pages = sum(pages.values())
            except RuntimeError as exc:
                tools[name].error = str(exc)
            del warm[name]
    finally:
        for w in warm.values():
            w.proc.kill()
            w.proc.wait()
    return tools


def _first_run(ours: Tool, files: list[Path], work: Path) -> None:
    """ocrstack's first run on a machine: the corpus file whose cold parse peaked highest among
    those that loaded the layout model without OCR, parsed with an empty model cache (the layout
    model compiled, as on a machine's first run)."""
    runs = zip(files, ours.kinds, ours.cold_rss_kib, strict=not ours.error)
    if ours.error or not (layout := [(rss, f) for f, k, rss in runs if k == "layout"]):
        return
    f = max(layout)[1]
    env = {"XDG_CACHE_HOME": str(work / "empty-cache")}
    try:
        res, wall = child("ocrstack", "cold", work / "first-run", [f], env=env)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        ours.error = str(exc)
        return
    ours.first_run = (f.stem, res["maxrss_kib"], wall)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def table_rows(tools: dict[str, Tool]) -> list[Row]:
    """One ``info`` row per tool and mode, then ocrstack's ratios to each peer and the targets."""
    rows = []
    for name, t in tools.items():
        if t.error:
            rows.append(Row(f"born-digital {name}", None, "", verdict="not-run", detail=t.error[:200]))
            continue
        fid = f"recall {t.mean(1):.3f} precision {t.mean(2):.3f} order {t.mean(3):.3f}"
        rows.append(
            Row(
                f"born-digital {name} cold",
                round(median(t.cold_s), 3),
                "s/file",
                detail=f"median of {len(t.cold_s)} files, fresh process each; peak RSS "
                f"{max(t.cold_rss_kib) / 1024:.0f} MiB (max); {fid}",
            )
        )
        rows.append(
            Row(
                f"born-digital {name} warm",
                round(t.warm_s_per_page(), 4),
                "s/page",
                detail=f"one process, {t.pages} pages; peak RSS {t.warm_rss_kib / 1024:.0f} MiB",
            )
        )
    ours = tools["ocrstack"]
    if ours.error:
        return rows
    for name, t in tools.items():
        if name == "ocrstack" or t.error:
            continue
        rows.append(
            Row(
                f"ocrstack / {name}",
                None,
                "",
                detail=f"cold s/file {_ratio(median(ours.cold_s), median(t.cold_s))}, warm s/page "
                f"{_ratio(ours.warm_s_per_page(), t.warm_s_per_page())}, cold peak RSS "
                f"{_ratio(max(ours.cold_rss_kib), max(t.cold_rss_kib))}, "
                f"recall {ours.mean(1) - t.mean(1):+.3f}, order {ours.mean(3) - t.mean(3):+.3f}",
            )
        )
    for peer, mode, value in (
        (COLD_PEER, "cold s/file", lambda t: median(t.cold_s)),
        (WARM_PEER, "warm s/page", Tool.warm_s_per_page),
    ):
        p = tools.get(peer)
        if p is None or p.error or not value(p):
            continue
        r = value(ours) / value(p)
        rows.append(
            Row(f"ocrstack {mode} / {peer}", round(r, 3), "x", "<= 1.0", "meets" if r <= 1.0 else "misses")
        )
    by_kind: dict[str, list[float]] = {}
    for k, rss in zip(ours.kinds, ours.cold_rss_kib, strict=True):
        by_kind.setdefault(k, []).append(rss / 1024)
    no_ocr = by_kind.get("plain", []) + by_kind.get("layout", [])
    if no_ocr:
        worst = max(no_ocr)
        rows.append(
            Row(
                "ocrstack peak RSS, born-digital without OCR",
                round(worst, 1),
                "MiB",
                f"<= {RSS_BORN_DIGITAL_MIB:g}",
                "meets" if worst <= RSS_BORN_DIGITAL_MIB else "misses",
                "largest cold parse of a corpus file with no OCR block; by file kind: "
                + ", ".join(f"{k} {len(v)} files max {max(v):.0f} MiB" for k, v in sorted(by_kind.items())),
            )
        )
    if ours.first_run is not None:
        stem, rss, wall = ours.first_run
        rows.append(
            Row(
                "ocrstack first run on a machine, peak RSS",
                round(rss / 1024, 1),
                "MiB",
                detail=f"{stem}, empty model cache: the layout model compiled ({wall:.2f} s wall); "
                "every later run loads the compiled model",
            )
        )
    return rows


def length_rows(opts: BenchOptions, work: Path) -> list[Row]:
    """ocrstack cold on generated born-digital PDFs of the first and last ``--rss-pages`` counts:
    peak RSS and wall s/page each; the last's s/page over the first's against :data:`LINEAR_TARGET`."""
    from ocrstack.bench.harness import make_pdf

    small, big = opts.rss_pages[0], opts.rss_pages[-1]
    res = {}
    for n in (small, big):
        pdf = make_pdf(work / "length" / f"text-{n}.pdf", n)
        out, wall = child("ocrstack", "cold", work / "length" / f"out-{n}", [pdf])
        res[n] = (out["maxrss_kib"] / 1024, wall / n)
    rows = [
        Row(
            f"ocrstack born-digital {n} pages",
            round(res[n][1], 3),
            "s/page",
            detail=f"cold process, wall incl. start-up; peak RSS {res[n][0]:.0f} MiB",
        )
        for n in (small, big)
    ]
    r = res[big][1] / res[small][1]
    rows.append(
        Row(
            f"ocrstack s/page {big} / {small} pages",
            round(r, 3),
            "x",
            f"<= {LINEAR_TARGET}",
            "meets" if r <= LINEAR_TARGET else "misses",
            f"peak RSS {res[big][0] / res[small][0]:.2f}x",
        )
    )
    return rows


def peer_rows(opts: BenchOptions, work: Path) -> list[Row]:
    """Bench section (see module docstring); a ``not-run`` row when the corpus is absent."""
    from ocrstack.bench.embedded import _corpus_pdf
    from ocrstack.bench.textlayer import dev_files

    probe = _corpus_pdf()
    if probe is None:
        return [Row("born-digital peers", None, "", verdict="not-run", detail="dev corpus not found")]
    files = dev_files(probe.parent)
    if opts.quick_mode:
        files = [f for f in files if f.stem in QUICK_FILES]
    return table_rows(measure(files, work / "peers")) + length_rows(opts, work / "peers")
