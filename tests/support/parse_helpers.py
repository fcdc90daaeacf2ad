"""Shared helpers for the parse tests that read the real corpus.

OCR is the expensive part (several CPU seconds per page), so one rapidocr recognizer with
a process-wide memo reads each (file, page, DPI) once per test session; layout variants
and assembly options reuse those lines.

Under pytest-xdist the tests of one page may run on different workers. Each page's results
(its OCR lines and every layout variant's :class:`PageResult`) are therefore also kept on disk
in the run's shared temporary directory (``$OCRSTACK_TEST_PAGE_MEMO``, set by tests/conftest.py
to the parent of the workers' pytest basetemps, so it lives and is cleaned up with the run): a
worker that needs a page another worker is reading waits on that page's file lock
(:mod:`filelock`) and loads the result instead of reading the page again. Pickles only, made
by this run's own workers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
from functools import lru_cache
from pathlib import Path

from filelock import FileLock

from ocrstack.parsing import documents
from ocrstack.parsing.assembly.markdown import render_page
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer
from ocrstack.parsing.stages import Parser

MEMO: dict = {}
DPI = 200
#: environment variable naming the directory shared by this run's xdist workers
SHARED_ENV = "OCRSTACK_TEST_PAGE_MEMO"


@lru_cache(maxsize=1)
def recognizer() -> RapidOcrRecognizer:
    """The session's one rapidocr recognizer (memoised lines)."""
    return RapidOcrRecognizer(memo=MEMO)


@lru_cache(maxsize=4)
def parser(layout: str) -> Parser:
    """A Parser for ``layout`` sharing :func:`recognizer`, on the OCR path (``--text-layer off``:
    these tests and the accuracy baseline measure OCR, not the PDF's own text; issue 11)."""
    return Parser(ParseOptions(inputs=(), layout=layout, text_layer="off"), recognizer=recognizer())


_RESULTS: dict[tuple, PageResult] = {}


def _shared_file(name: str, page: int, dpi: int) -> Path | None:
    """The on-disk memo of one page for this run, or None outside a run that set it up."""
    root = os.environ.get(SHARED_ENV)
    if not root:
        return None
    digest = hashlib.sha256(f"{name}\0{page}\0{dpi}".encode()).hexdigest()[:16]
    return Path(root) / f"page-{digest}.pickle"


def _load(path: Path) -> None:
    """Merge a page's stored OCR lines and results into this process's memos."""
    if path.is_file():
        memo, results = pickle.loads(path.read_bytes())
        for key, value in memo.items():
            MEMO.setdefault(key, value)
        for key, value in results.items():
            _RESULTS.setdefault(key, value)


def _store(path: Path, name: str, sha: str, page: int, dpi: int) -> None:
    memo = {k: v for k, v in MEMO.items() if k[0] == sha and k[1] == page}
    results = {k: v for k, v in _RESULTS.items() if k[0] == name and k[1] == page and k[3] == dpi}
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps((memo, results)))
    tmp.replace(path)


def parse(corpus: Path, name: str, page: int, layout: str = "rapid-layout", dpi: int = DPI) -> PageResult:
    """Parse 0-based ``page`` of ``corpus/name`` (PDF) with ``layout`` and rapidocr; cached
    in this process and, under xdist, across the run's workers (module docstring)."""
    key = (name, page, layout, dpi)
    if key not in _RESULTS:
        shared = _shared_file(name, page, dpi)
        if shared is None:
            _RESULTS[key] = _parse_page(corpus, name, page, layout, dpi)
        else:
            sha = documents.file_sha256(corpus / name)
            with FileLock(str(shared.with_suffix(".lock"))):
                _load(shared)
                if key not in _RESULTS:
                    _RESULTS[key] = _parse_page(corpus, name, page, layout, dpi)
                    _store(shared, name, sha, page, dpi)
    return dataclasses.replace(_RESULTS[key])


def _parse_page(corpus: Path, name: str, page: int, layout: str, dpi: int) -> PageResult:
    (image,) = documents.iter_pages(corpus / name, pages=str(page + 1), dpi=dpi)
    return parser(layout).parse_page(image)


def markdown(result: PageResult, keep_paratext: bool = False) -> str:
    """Markdown of one page result."""
    return render_page(result, keep_paratext=keep_paratext).markdown


def truth(corpus: Path, stem: str, page: int) -> str:
    """The text layer of 0-based ``page`` (NAME.txt, pages split by form feed)."""
    return (corpus / f"{stem}.txt").read_text(encoding="utf-8").split("\f")[page]
