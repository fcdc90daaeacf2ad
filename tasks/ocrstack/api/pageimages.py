"""``GET /v1/jobs/{id}/pages/{n}/image``: a job's page rendered once, then served from disk.

Rendering a page at the job's DPI costs as much as the job's own render (up to the job's pixel
budget, itself bounded by ``api serve --max-request-pixels``); before issue 25 (item 2) every call
rendered again, so a client looping on the URL held gigabytes. Now the first call renders the PNG
into ``jobs/<id>/pages/<n>.png`` (written to a temporary name, then renamed) and later calls send
that file; one lock per job and page makes concurrent first calls render once. The file goes with
the job's directory (cancel, delete, expiry).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from PIL import Image

from ocrstack.parsing import documents
from ocrstack.parsing.options import ParseOptions

log = logging.getLogger("ocrstack.api")
#: Directory under a job's directory holding its rendered pages.
PAGES_DIR = "pages"

_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def render(opts: ParseOptions, page: int) -> Image.Image:
    """Render 1-based ``page`` of the job's input at its DPI and pixel budget (the seam tests count)."""
    it = documents.iter_pages(
        opts.inputs[0], pages=str(page), dpi=opts.dpi, password=opts.password, max_pixels=opts.max_pixels
    )
    try:
        return next(iter(it)).image
    finally:
        it.close()


def png(job_dir: Path, opts: ParseOptions, page: int) -> Path:
    """The PNG of 1-based ``page`` under ``job_dir``, rendered on the first call only.

    Raises:
        OSError: the PNG cannot be written (no partial file is left behind).
    """
    target = job_dir / PAGES_DIR / f"{page}.png"
    with _locks_guard:
        lock = _locks.setdefault(target, threading.Lock())
    with lock:
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{page}.{os.getpid()}.{threading.get_ident()}.part")
            try:
                render(opts, page).save(tmp, "PNG")
                tmp.replace(target)
            finally:
                tmp.unlink(missing_ok=True)
    with _locks_guard:
        _locks.pop(target, None)
    return target
