"""Words per page of a PDF's own text layer, the reference of the hard-PDF batch (issue 22).

Two references: PDFium's text layer through pypdfium2 (always; the library ``ocrstack parse``
reads PDFs with) and poppler's ``pdftotext`` (when it is on PATH; Debian ``poppler-utils``).
A word is a maximal run of non-space characters (``str.split``), the same count the batch
applies to ocrstack's Markdown (:func:`markdown_words`, which first removes the Markdown's
HTML comments, tags and table/heading punctuation).

Run as ``python -m ocrstack.bench.pagewords FILE [PASSWORD]`` it prints
``{"pages": N, "pdfium": [words per page], "error": null|str}`` as JSON: the batch runs it in a
child process with a timeout, so a PDF that crashes or hangs PDFium cannot take the batch down.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

_PAGE = re.compile(r"<!-- page (\d+) -->")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TAG = re.compile(r"<[^>]+>")
_PUNCT_ONLY = re.compile(r"^[#|*_>\-:=`]+$")


def pdfium_words(path: Path, password: str | None = None) -> list[int]:
    """Word count of each page's text layer (pypdfium2 ``get_text_range``), page order.

    Raises:
        pypdfium2.PdfiumError: the file does not open (damaged, wrong or missing password).
    """
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path), password=password)
    try:
        counts = []
        for i in range(len(doc)):
            page = doc[i]
            text = page.get_textpage().get_text_range()
            counts.append(len(text.split()))
        return counts
    finally:
        doc.close()


def pdftotext_words(path: Path, pdftotext: str, timeout: float, password: str | None = None) -> list[int]:
    """Word count of each page of ``pdftotext FILE -`` (pages split at form feeds; the last,
    empty piece after the final form feed dropped).

    Raises:
        subprocess.CalledProcessError / subprocess.TimeoutExpired: pdftotext failed or hung.
    """
    argv = [pdftotext, "-q", "-enc", "UTF-8"]
    if password:
        argv += ["-upw", password]
    done = subprocess.run(
        [*argv, str(path), "-"], capture_output=True, timeout=timeout, check=True, text=True, errors="replace"
    )
    pages = done.stdout.split("\f")
    if pages and not pages[-1].strip():
        pages = pages[:-1]
    return [len(p.split()) for p in pages]


def markdown_words(markdown: str) -> dict[int, int]:
    """Words per page (0-based) of an ocrstack Markdown file, split at its ``<!-- page N -->``
    markers (a file without markers is page 0); comments, HTML tags and Markdown punctuation
    tokens (``#``, ``|``, ``---``) are not words."""
    parts = _PAGE.split(markdown)
    pages = (
        {0: parts[0]}
        if len(parts) == 1
        else {int(parts[k]) - 1: parts[k + 1] for k in range(1, len(parts), 2)}
    )
    out = {}
    for page, text in pages.items():
        text = _TAG.sub(" ", _COMMENT.sub(" ", text))
        out[page] = sum(1 for w in text.split() if not _PUNCT_ONLY.match(w))
    return out


def main(argv: list[str]) -> int:
    """Child entry point: print the JSON described in the module docstring; exit 0 even when the
    file does not open (the error is in the JSON), so only a crash or hang is a failure."""
    path = Path(argv[0])
    password = argv[1] if len(argv) > 1 else None
    try:
        words = pdfium_words(path, password)
        print(json.dumps({"pages": len(words), "pdfium": words, "error": None}))
    except Exception as exc:  # the reference reports why a PDF does not open; the batch shows it
        print(json.dumps({"pages": 0, "pdfium": [], "error": f"{type(exc).__name__}: {exc}"}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
