"""The olmOCR-Bench sample table (issue 22, "Done when" 1): each candidate tool parses the sample's
PDFs, its pages are written as ``<pdf stem>_pg<page>_repeat1.md`` and the ``olmocr`` package's own
scorer counts passes per test type (:mod:`~ocrstack.bench.olmocr_score`, run by
``--scorer-python``, an interpreter with ``olmocr`` 0.4.27 from ``envs/olmocr.txt``).

Rows are pluggable: :data:`CANDIDATES` maps a row name to a function ``(pdfs, work) -> {pdf:
{page: markdown}}`` (pages 1-based); a peer tool adds one entry (a function that raises
``ImportError`` or :class:`~ocrstack.core.errors.ConfigError` becomes a not-run row). The two
ocrstack rows run ``ocrstack parse`` as a user would, in a child process over every PDF at once,
with the default settings and with ``--text-layer off``; pages are split at ``<!-- page N -->``.
The peers (:class:`Peer`: pymupdf4llm 2.0's default mode, rapidocr's whole-page text, the
``tesseract`` binary) run as the born-digital peers table runs them
(:mod:`ocrstack.bench.peer_child`, one ``--peer-child TOOL warm`` process each, in the Python
given as ``peer_python``, default this one), on each page split out as a PDF of its own.

Targets (issue 22): default >= 70 of the 87 non-math dataset tests, every baseline test and the
blank-page test; ``--text-layer off`` >= 55.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.core import paths
from ocrstack.core.errors import CheckFailed, ConfigError

_PAGE = re.compile(r"<!-- page (\d+) -->")
Candidate = Callable[[list[Path], Path], dict[Path, dict[int, str]]]
TYPES = ("present", "absent", "order", "table", "math", "baseline", "blank", "dataset")


def split_pages(markdown: str) -> dict[int, str]:
    """``{page (1-based): text}`` of an ocrstack Markdown file (no marker: everything is page 1)."""
    parts = _PAGE.split(markdown)
    if len(parts) == 1:
        return {1: markdown}
    return {int(parts[k]): parts[k + 1].strip() + "\n" for k in range(1, len(parts), 2)}


def ocrstack_candidate(*parse_args: str) -> Candidate:
    """A candidate running ``python -m ocrstack parse PDF... -o WORK --no-progress --force
    *parse_args`` (``--force``: a kept ``--workdir`` must not hand back an earlier run's documents).

    Raises (from the candidate):
        CheckFailed: the parse exited with a code other than 0 or 7 (its last line named).
    """

    def run(pdfs: list[Path], work: Path) -> dict[Path, dict[int, str]]:
        argv = [
            sys.executable,
            "-m",
            "ocrstack",
            "parse",
            *map(str, pdfs),
            "-o",
            str(work),
            "--no-progress",
            "--force",
        ]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        done = subprocess.run([*argv, *parse_args], capture_output=True, text=True, env=env)
        if done.returncode not in (0, 7):
            tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise CheckFailed(f"ocrstack parse exited {done.returncode}: {tail}", "run the parse by hand")
        out = {}
        for pdf in pdfs:
            md = work / f"{pdf.stem}.md"
            out[pdf] = split_pages(md.read_text(encoding="utf-8")) if md.is_file() else {}
        return out

    return run


@dataclass(frozen=True)
class Peer:
    """A peer row: ``tool`` of :mod:`ocrstack.bench.peer_child` run on every page of the sample
    split out as a one-page PDF, in ``python`` (None: this Python; :func:`run_table` sets the
    ``peer_python`` it is given)."""

    tool: str
    python: str | None = None

    def __call__(self, pdfs: list[Path], work: Path) -> dict[Path, dict[int, str]]:
        """Markdown per page of each PDF. Raises ConfigError: the child failed (its last line)."""
        split = {pdf: _split(pdf, work / "pages") for pdf in pdfs}
        out = work / "md"
        argv = [
            self.python or sys.executable,
            "-m",
            "ocrstack.bench",
            "--peer-child",
            self.tool,
            "warm",
            str(out),
        ]
        every = [str(p) for pages in split.values() for p in pages]
        if not every:
            return {pdf: {} for pdf in pdfs}
        argv.append(every[0])  # the warm-up page; the warm protocol reads the pages from stdin
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        done = subprocess.run(argv, input="\n".join(every) + "\n", capture_output=True, text=True, env=env)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise ConfigError(f"{self.tool} failed: {tail}", f"run it by hand: {' '.join(argv[:6])} OUT PDF")
        return {
            pdf: {k + 1: (out / f"{p.stem}.md").read_text(encoding="utf-8") for k, p in enumerate(pages)}
            for pdf, pages in split.items()
        }


def _split(pdf: Path, folder: Path) -> list[Path]:
    """``pdf``'s pages as one-page PDFs ``folder/<stem>-pN.pdf`` (pypdfium2), in page order."""
    import pypdfium2 as pdfium

    folder.mkdir(parents=True, exist_ok=True)
    src = pdfium.PdfDocument(str(pdf))
    out = []
    try:
        for k in range(len(src)):
            one = pdfium.PdfDocument.new()
            one.import_pages(src, [k])
            target = folder / f"{pdf.stem}-p{k + 1}.pdf"
            one.save(str(target))
            one.close()
            out.append(target)
    finally:
        src.close()
    return out


#: Row name -> candidate: the two ocrstack rows, then the peers of issue 22's table.
CANDIDATES: dict[str, Candidate] = {
    "ocrstack default": ocrstack_candidate(),
    "ocrstack --text-layer off": ocrstack_candidate("--text-layer", "off"),
    "pymupdf4llm": Peer("pymupdf4llm"),
    "rapidocr (whole page)": Peer("rapidocr"),
    "tesseract": Peer("tesseract"),
}


@dataclass
class SampleTable:
    """Pass counts ``{row: {type: (passed, total)}}`` and rows that did not run (with the reason)."""

    counts: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)
    math: bool = False

    def to_text(self) -> str:
        """A Markdown table, one row per candidate, ``passed/total`` per test type."""
        lines = ["| tool | " + " | ".join(TYPES) + " |", "|---" * (len(TYPES) + 1) + "|"]
        for row, c in self.counts.items():
            cells = []
            for t in TYPES:
                if t == "math" and not self.math:
                    cells.append("not run (no --math)")
                else:
                    cells.append(f"{c[t][0]}/{c[t][1]}" if t in c else "-")
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        lines += [f"| {row} | not run: {why} |" for row, why in self.not_run.items()]
        return "\n".join(lines)

    def to_json(self) -> str:
        """The counts and the not-run rows as JSON."""
        return json.dumps({"counts": self.counts, "not_run": self.not_run, "math": self.math}, indent=1)


def default_sample() -> Path:
    """``../shared/bench/olmocr-sample`` beside the checkout (``OCRSTACK_OLMOCR_SAMPLE`` overrides)."""
    if os.environ.get("OCRSTACK_OLMOCR_SAMPLE"):
        return Path(os.environ["OCRSTACK_OLMOCR_SAMPLE"])
    root = paths.repo_root() or Path.cwd()
    return root.parent / "shared" / "bench" / "olmocr-sample"


def run_table(
    sample: Path,
    work: Path,
    scorer_python: str,
    rows: dict[str, Candidate] | None = None,
    math: bool = False,
    peer_python: str | None = None,
) -> SampleTable:
    """Run every candidate over ``sample/pdfs`` into ``work/<row>`` and score them all in one
    scorer run; :class:`Peer` rows run in ``peer_python`` (None: this Python).

    Raises:
        ConfigError: ``sample`` has no ``pdfs/``, or the scorer cannot import ``olmocr``.
    """
    root = sample / "pdfs"
    if not root.is_dir():
        raise ConfigError(f"no olmOCR sample at {sample}", "pass --sample DIR (the folder holding pdfs/)")
    pdfs = sorted(root.rglob("*.pdf"))
    table = SampleTable(math=math)
    cand_root = work / "candidates"
    for row, candidate in (rows or CANDIDATES).items():
        slug = re.sub(r"[^A-Za-z0-9]+", "-", row).strip("-")
        if isinstance(candidate, Peer) and peer_python:
            candidate = dataclasses.replace(candidate, python=peer_python)
        try:
            pages = candidate(pdfs, work / "outputs" / slug)
        except (ImportError, ConfigError, CheckFailed) as exc:
            table.not_run[row] = str(exc)
            continue
        for pdf, texts in pages.items():
            rel = pdf.relative_to(root)
            n = max([1, *texts])
            for page in range(1, n + 1):
                target = cand_root / slug / rel.parent / f"{rel.stem}_pg{page}_repeat1.md"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(texts.get(page, ""), encoding="utf-8")
    scored = _score(sample, cand_root, scorer_python, math)
    for row in rows or CANDIDATES:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", row).strip("-")
        if slug in scored:
            table.counts[row] = scored[slug]
    return table


def _score(sample: Path, candidates: Path, python: str, math: bool) -> dict[str, dict[str, list[int]]]:
    if not candidates.is_dir():
        return {}
    tasks_dir = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": tasks_dir}
    argv = [
        python,
        "-m",
        "ocrstack.bench.olmocr_score",
        str(sample),
        str(candidates),
        *(["--math"] if math else []),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise ConfigError(
            f"the olmocr scorer failed ({python}): {tail}",
            "install it: pip install --require-hashes --no-deps -r envs/olmocr.txt (nox -s olmocr does)",
        )
    return json.loads(done.stdout.strip().splitlines()[-1])
