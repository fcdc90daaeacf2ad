"""Shared helpers for the parse tests that read the real corpus.

OCR is the expensive part (several CPU seconds per page), so one rapidocr recognizer with
a process-wide memo reads each (file, page, DPI) once per test session; layout variants
and assembly options reuse those lines.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path

from ocrstack.parsing import documents
from ocrstack.parsing.assembly.markdown import render_page
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer
from ocrstack.parsing.stages import Parser

MEMO: dict = {}
DPI = 200


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


def parse(corpus: Path, name: str, page: int, layout: str = "rapid-layout", dpi: int = DPI) -> PageResult:
    """Parse 0-based ``page`` of ``corpus/name`` (PDF) with ``layout`` and rapidocr; cached."""
    key = (name, page, layout, dpi)
    if key not in _RESULTS:
        (image,) = documents.iter_pages(corpus / name, pages=str(page + 1), dpi=dpi)
        _RESULTS[key] = parser(layout).parse_page(image)
    return dataclasses.replace(_RESULTS[key])


def markdown(result: PageResult, keep_paratext: bool = False) -> str:
    """Markdown of one page result."""
    return render_page(result, keep_paratext=keep_paratext).markdown


def truth(corpus: Path, stem: str, page: int) -> str:
    """The text layer of 0-based ``page`` (NAME.txt, pages split by form feed)."""
    return (corpus / f"{stem}.txt").read_text(encoding="utf-8").split("\f")[page]
