"""Made PDFs for tests: text runs placed with PDFium's own page-object API (pypdfium2)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from pathlib import Path


def text_pdf(
    path: Path,
    runs: Iterable[tuple[str, float, float, float, str]],
    page: tuple[float, float] = (612.0, 792.0),
) -> Path:
    """Write a one-page PDF of ``page`` (width, height in points; default US letter) holding each
    run ``(text, x, y, size, font)``: ``x, y`` in points from the bottom-left, ``size`` in points,
    ``font`` a PDF base-14 name ("Helvetica", "Times-Roman", ...). Returns ``path``."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    pdf = pdfium.PdfDocument.new()
    try:
        made = pdf.new_page(*page)
        for text, x, y, size, font in runs:
            obj = raw.FPDFPageObj_NewTextObj(pdf.raw, font.encode(), size)
            buf = (ctypes.c_ushort * (len(text) + 1))(*[ord(c) for c in text], 0)
            raw.FPDFText_SetText(obj, buf)
            raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
            raw.FPDFPage_InsertObject(made.raw, obj)
        raw.FPDFPage_GenerateContent(made.raw)
        made.close()
        pdf.save(str(path))
    finally:
        pdf.close()
    return path
