"""Give page-sized buffers back to the system when they are freed (glibc malloc; issue 21).

A parse allocates and frees buffers of a rendered page's size many times a page (the page image,
15 MB at 200 DPI; its grey copy; the layout model's input). glibc's malloc serves a block of
128 KiB or more with ``mmap`` and unmaps it on free, but after the first such free it raises that
threshold to the block's size (its dynamic threshold), so later page buffers come from the heap
and stay resident when freed; each thread that allocates also gets an arena of its own (up to 8
per core), holding its freed blocks apart from the others. Measured on two-page dev-corpus PDFs
parsed cold (2 page workers, the layout thread, ONNX Runtime's): peak RSS 369 -> 299 MiB
(math_crc_paper), 388 -> 301 (zh_ctex_manual) with the threshold fixed at :data:`MMAP_THRESHOLD`
and :data:`ARENA_MAX` arenas, at the same CPU a page within the noise (0.235-0.242 s warm).
"""

from __future__ import annotations

import ctypes
import platform
import threading

#: ``mallopt`` parameters (glibc ``malloc.h``).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
#: Blocks of this size and more are mmapped and unmapped on free: a page row is 5-20 KiB, a page
#: 1-15 MB.
MMAP_THRESHOLD = 1 << 20
#: malloc arenas in all (the main one included): the pipeline's threads share them.
ARENA_MAX = 2

_done = threading.Event()


def return_large_buffers() -> bool:
    """Set glibc's ``M_MMAP_THRESHOLD`` to :data:`MMAP_THRESHOLD` (fixed: no dynamic threshold)
    and ``M_ARENA_MAX`` to :data:`ARENA_MAX` for this process, once. Returns True when set; False
    where the C library is not glibc (nothing changed) or refused a value. Arenas made before
    the call stay; call it before the worker threads start."""
    if _done.is_set():
        return True
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols, glibc's among them
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(M_ARENA_MAX, ARENA_MAX) == 1
    if ok:
        _done.set()
    return ok
