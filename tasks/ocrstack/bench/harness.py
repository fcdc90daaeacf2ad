"""What every benchmark row uses: generated PDFs, a fleet of fake OpenAI servers, a quiet parse run."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ocrstack.core import proc
from ocrstack.core.errors import StepFailed


def make_pdf(path: Path, pages: int, lines: int = 40) -> Path:
    """Write a ``pages``-page US-letter PDF with ``lines`` lines of Helvetica text per page (pypdfium2)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    try:
        for i in range(pages):
            page = pdf.new_page(612, 792)
            for ln in range(lines):
                obj = raw.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 11.0)
                text = f"Page {i + 1} line {ln + 1}: the quick brown fox jumps over the lazy dog 0123456789."
                buf = (ctypes.c_ushort * (len(text) + 1))(*[ord(c) for c in text], 0)
                raw.FPDFText_SetText(obj, buf)
                raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, 56, 740 - ln * 17)
                raw.FPDFPage_InsertObject(page.raw, obj)
            raw.FPDFPage_GenerateContent(page.raw)
            page.close()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.pdf")
        pdf.save(tmp)
    finally:
        pdf.close()
    os.replace(tmp, path)
    return path


class Fleet:
    """``n`` fake OpenAI servers, each in its own process on 127.0.0.1 (stopped by pid on exit)."""

    def __init__(self, n: int, latency: float, logdir: Path, max_concurrent: int | None = 1) -> None:
        self.n, self.latency, self.logdir, self.max_concurrent = n, latency, logdir, max_concurrent
        self.procs: list[subprocess.Popen[bytes]] = []
        self.urls: list[str] = []

    def __enter__(self) -> Fleet:
        try:
            logs = []
            for i in range(self.n):
                log = self.logdir / f"fake-{os.getpid()}-{time.monotonic_ns()}-{i}.log"
                argv = [
                    sys.executable,
                    "-m",
                    "ocrstack.testing.fake_openai",
                    "--port",
                    "0",
                    "--latency",
                    str(self.latency),
                    "--probe-latency",
                    "0",
                ]
                if self.max_concurrent:
                    argv += ["--max-concurrent", str(self.max_concurrent)]
                self.procs.append(proc.spawn(argv, log=log))
                logs.append(log)
            for p, log in zip(self.procs, logs, strict=True):
                self.urls.append(_wait_ready(p, log))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)


def _wait_ready(p: subprocess.Popen[bytes], log: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        for line in text.splitlines():
            if line.startswith("READY "):
                return line.split()[1]
        if p.poll() is not None:
            raise StepFailed(
                f"fake OpenAI server exited with {p.returncode}; log: {log}",
                "read the log",
                returncode=p.returncode,
            )
        time.sleep(0.05)
    raise StepFailed(f"fake OpenAI server not ready after {timeout:.0f} s; log: {log}", "read the log")


def parse_options(pdf: Path, out: Path, urls: Sequence[str], concurrency: int, dpi: int, **kw: object):
    """ParseOptions for a bench run; ``out`` is emptied first so the resume cache cannot serve old pages.
    ``--text-layer off``: these runs measure the server path, and :func:`make_pdf`'s pages have a
    sound text layer that ``auto`` would read without a request."""
    from ocrstack.parsing.options import ParseOptions

    shutil.rmtree(out, ignore_errors=True)

    base: dict[str, object] = dict(
        inputs=(pdf,),
        output=out,
        layout="none",
        recognizer="openai",
        text_layer="off",
        server_urls=tuple(urls),
        concurrency=concurrency,
        force=True,
        dpi=dpi,
        retries=1,
        request_timeout=120.0,
    )
    base.update(kw)
    return ParseOptions(**base)  # type: ignore[arg-type]


def run_pipeline(options, executor=None) -> tuple[float, object]:
    """Run ``parsing.pipeline.run`` quietly; returns (seconds, its RunSummary).

    A failed validation (of fake answers: not what is measured) is tolerated.

    Raises:
        OcrstackError: the run's own errors, and :class:`PartialSuccess` when pages or blocks
            failed (the figure would not measure a whole run).
    """
    from ocrstack.core.errors import CheckFailed
    from ocrstack.parsing.run import pipeline

    start = time.perf_counter()
    summary = pipeline.run(options, progress=False, echo=lambda _s: None, executor=executor)
    seconds = time.perf_counter() - start
    problem = summary.error()
    if problem is not None and not isinstance(problem, CheckFailed):
        raise problem
    return seconds, summary
