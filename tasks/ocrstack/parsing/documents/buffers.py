"""Page-sized render buffers kept for the next page (issue 21: warm seconds per page).

A PDF page rendered at 200 DPI fills a 15 MB buffer. A fresh one comes from the system
as untouched pages (:mod:`ocrstack.core.memory` gives freed page buffers back), and PDFium's first
write to each of its 3,800 pages faults: rendering tables_booktabs_ruled_vs_booktabs page 1 took
13-15 ms into a fresh buffer, 3 ms into one used before.

:class:`RenderBuffers` keeps the last buffer it handed out and hands it out again once nothing
uses it any more: the page image made on it (:func:`ocrstack.parsing.documents.pdf._rgb_image`
maps it, no copy) holds a reference to it while it lives, so it is free when the pool holds the
only reference (CPython's reference count; a numpy view or a Pillow image on it counts). It
serves a page of the same size or up to :data:`SLACK` smaller. A page that finds it in use or of
another size gets a fresh buffer, which the pool keeps instead: the older one is freed with its
page as before. So a warm process renders each document's first page into the buffer of the
one before, and no more memory stays resident than one page buffer between documents (keeping
every buffer of a two-page document raised its peak by one buffer: zh_ctex_manual cold
245 -> 253 MiB).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

#: A kept buffer serves a page needing at least 1 / SLACK of its bytes.
SLACK = 1.25


class RenderBuffers:
    """The render buffer pool (ctypes ``c_ubyte`` arrays; see the module docstring)."""

    def __init__(self) -> None:
        self._kept: list[Any] = []  # the last buffer handed out (a list: its reference count is known)
        self._lock = threading.Lock()

    def take(self, size: int) -> Any:
        """A buffer of at least ``size`` bytes that nothing else uses (contents undefined)."""
        with self._lock:
            # referenced only by the list (and getrefcount's argument): no image or view uses it
            if (
                self._kept
                and sys.getrefcount(self._kept[0]) == 2
                and size <= len(self._kept[0]) <= size * SLACK
            ):
                return self._kept[0]
            self._kept[:] = [(ctypes.c_ubyte * size)()]
            return self._kept[0]

    def bitmap(self, width: int, height: int, format: int, rev_byteorder: bool = False) -> Any:
        """``bitmap_maker`` for ``pypdfium2.PdfPage.render``: ``PdfBitmap.new_native`` on a
        packed buffer from :meth:`take` (a page is filled with its background before drawing)."""
        import pypdfium2 as pdfium
        import pypdfium2.internal as pdfium_i

        stride = width * pdfium_i.BitmapTypeToNChannels[format]
        buf = self.take(stride * height)
        return pdfium.PdfBitmap.new_native(width, height, format, rev_byteorder, buffer=buf, stride=stride)


#: The process's render buffers (pages are rendered under one lock, one at a time).
BUFFERS = RenderBuffers()
