"""Freed page-sized buffers go back to the system (:mod:`ocrstack.core.memory`, issue 21)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

#: In a fresh interpreter: free a 16 MB block (glibc then raises its mmap threshold to 16 MB),
#: then allocate, touch and free a 15 MB one, and print how much of it stayed resident (KiB).
_STAYS = """
import sys
from ocrstack.core import memory
if sys.argv[1] == "set":
    assert memory.return_large_buffers() and memory.return_large_buffers()
def rss():
    return int([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1])
a = bytearray(16 << 20); del a
before = rss()
b = bytearray(15 << 20); del b
print(rss() - before)
"""


def _stays(mode: str) -> int:
    cp = subprocess.run([sys.executable, "-c", _STAYS, mode], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return int(cp.stdout)


@pytest.mark.proc
@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc settings")
def test_a_freed_page_sized_block_leaves_no_resident_memory():
    assert _stays("default") > 10 << 10  # glibc's dynamic threshold: the 15 MB stay resident
    assert _stays("set") < 1 << 10
