"""The hard-PDF batch (issue 22, "Done when" 3): ``ocrstack parse`` as a user runs it, one child
process per file with a per-file timeout, over a directory of hard real-world PDFs.

The corpus is the test files of PDF libraries (pdf.js ``test/pdfs``, pdfminer.six ``samples``,
pypdf ``resources``), named with their repository, commit, path, sha256 and the repository's
licence in ``ocrstack/data/hardpdfs.json``. The files themselves are not committed: most carry no
licence of their own (bug-report attachments, fuzzed files); :func:`fetch` downloads the listed
ones from ``raw.githubusercontent.com`` at the pinned commit into a cache directory outside the
checkout (:func:`default_dir`) and checks each sha256. Any directory of PDFs can be run.

Per file the batch records the pages and words of the PDF's own text layer (PDFium through
pypdfium2, and poppler's ``pdftotext`` when installed; :mod:`~ocrstack.bench.pagewords`), the
words of ocrstack's Markdown and one outcome:

* ``ok`` -- exit 0 (or 7 with every page present) and no page emptied;
* ``failed: REASON`` -- ocrstack refused the file with an error line (e.g. a damaged file);
* ``timeout`` -- the parse ran past the per-file limit (a hang);
* ``crash: REASON`` -- a signal, a traceback or an exit code outside the CLI contract;
* ``EMPTIED pN..`` -- a page whose text layer has words came out with none.

A batch passes when no file crashed, timed out or was emptied (:attr:`Batch.bad`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ocrstack.bench.pagewords import markdown_words, pdftotext_words
from ocrstack.core import options as opt
from ocrstack.core import paths
from ocrstack.core.errors import StepFailed
from ocrstack.parsing.options import TextLayerMode

#: Exit codes of the CLI contract (``ocrstack.core.errors``); any other is a crash.
_CONTRACT = set(range(0, 12)) | {130}
_RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"


@dataclass(frozen=True)
class HardPdfOptions:
    """Options of ``ocrstack quality hardpdfs`` (the directory is its positional argument)."""

    fetch: bool = opt.option(
        False, flags=("--fetch",), help="first download the manifest's files missing from DIR (network)"
    )
    timeout: float = opt.option(
        300.0,
        flags=("--timeout",),
        convert=float,
        above=0,
        example="300",
        help="seconds per file (default 300)",
    )
    text_layer: str = opt.option(
        TextLayerMode.AUTO.value,
        flags=("--text-layer",),
        choices=tuple(m.value for m in TextLayerMode),
        help="parse's --text-layer (default auto)",
    )
    workdir: Path | None = opt.option(
        None,
        flags=("--workdir",),
        convert=opt.path,
        help="keep the outputs here (default: a temporary directory)",
    )


def manifest() -> list[dict[str, Any]]:
    """The committed corpus list: dicts with ``file`` (name in the corpus directory), ``repo``,
    ``commit``, ``path``, ``bytes``, ``sha256``, ``licence`` and an optional ``password``."""
    return json.loads(paths.data_file("hardpdfs.json").read_text(encoding="utf-8"))


def default_dir() -> Path:
    """Where :func:`fetch` puts the corpus: ``$XDG_CACHE_HOME/ocrstack/hardpdfs`` (default
    ``~/.cache``), outside any checkout."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ocrstack" / "hardpdfs"


def sha256(path: Path) -> str:
    """Hex sha256 of the file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(directory: Path, get: Callable[[str], bytes] | None = None) -> list[str]:
    """Download every manifest file missing from ``directory`` (or with another sha256) from its
    repository at the pinned commit; returns the names written. ``get`` (url -> bytes) replaces
    the HTTP download (tests).

    Raises:
        StepFailed: a download failed or its sha256 differs from the manifest's (nothing kept).
    """
    get = get or _http_get
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for entry in manifest():
        target = directory / entry["file"]
        if target.is_file() and sha256(target) == entry["sha256"]:
            continue
        url = _RAW.format(**entry)
        data = get(url)
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise StepFailed(f"{url}: sha256 differs from the manifest", "check the pinned commit and path")
        tmp = target.with_name(target.name + ".part")
        tmp.write_bytes(data)
        tmp.replace(target)
        written.append(entry["file"])
    return written


def _http_get(url: str) -> bytes:
    import httpx

    try:
        reply = httpx.get(url, timeout=60, follow_redirects=True)
        reply.raise_for_status()
    except httpx.HTTPError as exc:
        raise StepFailed(f"download failed: {url}: {exc}", "check the network, or copy the files in") from exc
    return reply.content


@dataclass
class FileResult:
    """One row of the batch table: words are totals over the file's pages; ``pdftotext`` is
    None when poppler is not installed or failed on the file."""

    file: str
    pages: int
    pdfium: int
    pdftotext: int | None
    ocrstack: int
    seconds: float
    outcome: str
    emptied: list[int] = field(default_factory=list)

    @property
    def bad(self) -> bool:
        """A crash, a timeout or an emptied page (a ``failed`` with its reason is not)."""
        return self.outcome.split(":")[0].split(" ")[0] in {"crash", "timeout", "EMPTIED"}


@dataclass
class Batch:
    """The batch: its rows and which reference columns were measured."""

    rows: list[FileResult]
    pdftotext: str | None

    @property
    def bad(self) -> list[FileResult]:
        """Rows that fail the batch (:attr:`FileResult.bad`)."""
        return [r for r in self.rows if r.bad]

    def to_json(self) -> str:
        """The rows as JSON (a list of objects) with the verdict."""
        return json.dumps(
            {"pdftotext": self.pdftotext, "rows": [asdict(r) for r in self.rows], "bad": len(self.bad)},
            indent=1,
        )

    def to_text(self) -> str:
        """A Markdown table (file, pages, words: pdfium, pdftotext, ocrstack; seconds, outcome)
        and a last line with the counts."""
        lines = [
            "| file | pages | words pdfium | words pdftotext | words ocrstack | s | outcome |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            ptt = "-" if r.pdftotext is None else str(r.pdftotext)
            lines.append(
                f"| {r.file} | {r.pages} | {r.pdfium} | {ptt} | {r.ocrstack} | {r.seconds:.1f} "
                f"| {r.outcome} |"
            )
        n_ok = sum(r.outcome == "ok" for r in self.rows)
        n_failed = sum(r.outcome.startswith("failed") for r in self.rows)
        lines.append(
            f"\n{len(self.rows)} files: {n_ok} ok, {n_failed} failed with a reason, "
            f"{len(self.bad)} crashed, hung or emptied"
        )
        return "\n".join(lines)


def run_batch(
    directory: Path, out: Path | None = None, timeout: float = 300, parse_args: tuple[str, ...] = ()
) -> Batch:
    """Parse every ``*.pdf`` in ``directory`` (name order) into ``out`` (a temporary directory when
    None), each in its own ``python -m ocrstack parse`` process killed after ``timeout`` seconds,
    plus ``parse_args`` (e.g. ``("--text-layer", "off")``); manifest passwords are passed on."""
    passwords = {e["file"]: e["password"] for e in manifest() if e.get("password")}
    ptt = shutil.which("pdftotext")
    files = sorted(directory.glob("*.pdf"))
    with tempfile.TemporaryDirectory(prefix="ocrstack-hardpdfs-") as tmp:
        work = out or Path(tmp)
        rows = [
            _one(pdf, work / pdf.stem, timeout, passwords.get(pdf.name), ptt, parse_args) for pdf in files
        ]
    return Batch(rows, ptt)


def _one(
    pdf: Path, out: Path, timeout: float, password: str | None, ptt: str | None, parse_args: tuple[str, ...]
) -> FileResult:
    ref = _reference(pdf, password, timeout)
    ref_words: list[int] = ref.get("pdfium", [])
    ptt_total = None
    if ptt:
        try:
            ptt_total = sum(pdftotext_words(pdf, ptt, timeout, password))
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            ptt_total = None
    argv = [sys.executable, "-m", "ocrstack", "parse", str(pdf), "-o", str(out), "--no-progress", *parse_args]
    if password:
        argv += ["--password", password]
    start = time.perf_counter()
    rc, _, stderr = _run_bounded(argv, timeout)
    seconds = time.perf_counter() - start
    md = out / f"{pdf.stem}.md"
    words = markdown_words(md.read_text(encoding="utf-8")) if md.is_file() else {}
    outcome, emptied = _outcome(rc, stderr, ref_words, words)
    return FileResult(
        pdf.name,
        int(ref.get("pages", 0)),
        sum(ref_words),
        ptt_total,
        sum(words.values()),
        seconds,
        outcome,
        emptied,
    )


def _outcome(
    rc: int | None, stderr: str, ref_words: list[int], words: dict[int, int]
) -> tuple[str, list[int]]:
    """The outcome string and the emptied pages (1-based) of one parse: see the module docstring."""
    if rc is None:
        return "timeout", []
    last = _last_line(stderr)
    if rc not in _CONTRACT or "Traceback (most recent call last)" in stderr:
        return f"crash: exit {rc}: {last}", []
    if rc not in (0, 7):
        return f"failed: {last}", []
    emptied = [i + 1 for i, n in enumerate(ref_words) if n > 0 and words.get(i, 0) == 0]
    if emptied:
        return "EMPTIED p" + ",".join(map(str, emptied)), emptied
    return ("ok" if rc == 0 else f"partial: {last}"), []


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:160] if lines else "(no message)"


def _reference(pdf: Path, password: str | None, timeout: float) -> dict[str, Any]:
    argv = [sys.executable, "-m", "ocrstack.bench.pagewords", str(pdf), *([password] if password else [])]
    rc, stdout, _ = _run_bounded(argv, timeout)
    if rc != 0:
        return {"pages": 0, "pdfium": [], "error": "the reference timed out or crashed"}
    return json.loads(stdout)


def _run_bounded(argv: list[str], timeout: float) -> tuple[int | None, str, str]:
    """Run ``argv`` in its own session; on timeout kill the whole process group.
    Returns ``(exit code or None on timeout, stdout, stderr)``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        env=env,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, "", ""
    return proc.returncode, stdout, stderr
