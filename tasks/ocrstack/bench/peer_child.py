"""Child process of the born-digital peers table (:mod:`ocrstack.bench.peers`, issue 21).

``python -m ocrstack.bench --peer-child TOOL MODE OUT PDF...`` converts with one tool and writes
``OUT/NAME.md``; its last stdout line is ``{"maxrss_kib": VmHWM of this process, "seconds": {PDF:
s}}``. ``MODE`` is ``cold`` (every PDF given, one in practice; its seconds are the conversion only,
the parent times the whole process) or ``warm``: the tool is loaded and run once on the PDF given,
then the child prints ``{"ready": true}`` and converts each PDF path read from stdin, printing
``{"pdf": PDF, "seconds": s}`` after each, until stdin ends (the parent feeds every tool's warm
child file by file in turn, as it runs the cold children, so a change of load hits all alike).

Tools (:data:`TOOLS`): ``ocrstack`` (cold: the pipeline as ``ocrstack parse PDF -o OUT --force
--keep-paratext`` runs it, ``--text-layer auto``, in a fresh process -- the CLI's own argument
parsing, 0.1-0.3 s, is left out: a bench driver does not import the CLI; warm: one
:class:`~ocrstack.parsing.stages.Parser` reused, :mod:`ocrstack.bench.textlayer`),
``pymupdf4llm`` (``pymupdf4llm.to_markdown`` with its default layout mode),
``pymupdf4llm-legacy`` (the same after ``pymupdf4llm.use_layout(False)``, the pre-2.0 rule-based
path; pymupdf 2.0's ``pymupdf4llm/__init__.py``), ``markitdown`` (``MarkItDown().convert``,
pdfminer.six underneath). The peers come from the ``bench`` extra (``envs/lock/bench.txt``).

Two OCR peers for the olmOCR sample table (issue 22, :mod:`ocrstack.bench.olmocr_sample`), not in
:data:`TOOLS` (the born-digital table of issue 21): ``rapidocr`` (its whole-page text as
``rapidocr.RapidOCR()`` returns it, lines in its own order, each page rendered at
:data:`OCR_DPI`) and ``tesseract`` (the ``tesseract`` binary's text of each rendered page,
default language and page segmentation).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ocrstack.bench.rss import peak_rss_kib

TOOLS = ("ocrstack", "pymupdf4llm", "pymupdf4llm-legacy", "markitdown")
#: The OCR peers of the olmOCR sample table (see the module docstring).
OCR_TOOLS = ("rapidocr", "tesseract")
#: Render resolution of the OCR peers' pages (ocrstack's own default, ``--dpi``).
OCR_DPI = 200


def _pymupdf4llm(legacy: bool) -> Callable[[Path, Path], None]:
    import pymupdf4llm

    if legacy:
        pymupdf4llm.use_layout(False)

    def convert(pdf: Path, out: Path) -> None:
        (out / f"{pdf.stem}.md").write_text(pymupdf4llm.to_markdown(str(pdf)), encoding="utf-8")

    return convert


def _markitdown() -> Callable[[Path, Path], None]:
    from markitdown import MarkItDown

    md = MarkItDown()

    def convert(pdf: Path, out: Path) -> None:
        (out / f"{pdf.stem}.md").write_text(md.convert(str(pdf)).text_content, encoding="utf-8")

    return convert


def _rapidocr() -> Callable[[Path, Path], None]:
    import numpy as np
    from rapidocr import RapidOCR

    from ocrstack.parsing.documents import iter_pages

    engine = RapidOCR()

    def convert(pdf: Path, out: Path) -> None:
        pages = []
        for page in iter_pages(pdf, dpi=OCR_DPI):
            res = engine(np.asarray(page.image.convert("RGB")))
            pages.append("\n".join(str(t) for t in (res.txts or ())))
        (out / f"{pdf.stem}.md").write_text("\n\n".join(pages) + "\n", encoding="utf-8")

    return convert


def _tesseract() -> Callable[[Path, Path], None]:
    import shutil
    import subprocess
    import tempfile

    from ocrstack.core.errors import ConfigError
    from ocrstack.parsing.documents import iter_pages

    exe = shutil.which("tesseract")
    if exe is None:
        raise ConfigError(
            "tesseract is not installed (no tesseract on PATH)", "apt-get install tesseract-ocr"
        )

    def convert(pdf: Path, out: Path) -> None:
        pages = []
        with tempfile.TemporaryDirectory(prefix="ocrstack-tesseract-") as tmp:
            for page in iter_pages(pdf, dpi=OCR_DPI):
                png = Path(tmp) / f"p{page.index + 1}.png"
                page.image.save(png)
                done = subprocess.run([exe, str(png), "stdout"], capture_output=True, text=True, check=True)
                pages.append(done.stdout.strip())
        (out / f"{pdf.stem}.md").write_text("\n\n".join(pages) + "\n", encoding="utf-8")

    return convert


def _ocrstack_cold() -> Callable[[Path, Path], None]:
    def convert(pdf: Path, out: Path) -> None:
        from ocrstack.parsing.options import ParseOptions
        from ocrstack.parsing.run import pipeline

        options = ParseOptions(inputs=(pdf,), output=out, force=True, keep_paratext=True)
        summary = pipeline.run(options, progress=False, echo=lambda s: None)
        if summary.error() is not None:
            raise SystemExit(f"ocrstack parse {pdf}: {summary.error()}")

    return convert


def _ocrstack_warm(first: Path, out: Path) -> Callable[[Path, Path], None]:
    from ocrstack.bench.textlayer import timed_run, warm_parser

    base, parser = warm_parser(first, "auto", out / ".warm", 200)

    def convert(pdf: Path, out: Path) -> None:
        timed_run(base, parser, pdf, out)

    return convert


def converter(tool: str, mode: str, first: Path, out: Path) -> Callable[[Path, Path], None]:
    """The conversion function of ``tool`` (one of :data:`TOOLS` or :data:`OCR_TOOLS`) for
    ``mode``; imports the tool.

    Raises:
        ValueError: unknown tool.
        ImportError: the tool is not installed (the ``bench`` extra).
        ConfigError: the ``tesseract`` binary is not on PATH.
    """
    if tool == "ocrstack":
        return _ocrstack_cold() if mode == "cold" else _ocrstack_warm(first, out)
    if tool in ("pymupdf4llm", "pymupdf4llm-legacy"):
        return _pymupdf4llm(legacy=tool.endswith("legacy"))
    if tool == "markitdown":
        return _markitdown()
    if tool == "rapidocr":
        return _rapidocr()
    if tool == "tesseract":
        return _tesseract()
    raise ValueError(f"unknown tool {tool!r}; expected one of {', '.join(TOOLS + OCR_TOOLS)}")


def peer_child(argv: Sequence[str]) -> int:
    """Entry point (see module docstring); prints the JSON line, returns the exit code."""
    tool, mode, out_dir, *files = argv
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pdfs = [Path(f) for f in files]
    convert = converter(tool, mode, pdfs[0], out)
    if mode == "warm":
        if tool != "ocrstack":  # ocrstack's warm_parser has run page 1 already
            (out / ".warm").mkdir(exist_ok=True)
            convert(pdfs[0], out / ".warm")
        print(json.dumps({"ready": True}), flush=True)
    seconds = {}
    for pdf in _stdin_pdfs() if mode == "warm" else pdfs:
        t = time.perf_counter()
        convert(pdf, out)
        seconds[str(pdf)] = time.perf_counter() - t
        if mode == "warm":
            print(json.dumps({"pdf": str(pdf), "seconds": seconds[str(pdf)]}), flush=True)
    print(json.dumps({"maxrss_kib": peak_rss_kib(), "seconds": seconds}))
    return 0


def _stdin_pdfs():
    """PDF paths read from stdin, one a line, as they come (the warm protocol)."""
    for line in sys.stdin:
        if line.strip():
            yield Path(line.strip())
