"""File digests shared by the stages (the weights check of ``fetch``, the input identity of
``parsing``)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path | str, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file, read in ``chunk``-byte pieces (4 MiB: memory stays flat for weights of
    any size; ``hashlib.file_digest`` would do it but needs Python 3.11, and guide 2 allows 3.10).

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
