"""The shared file digest (:mod:`ocrstack.core.digest`): read in pieces, the same as hashing
the whole file at once."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ocrstack.core.digest import sha256_file


def test_sha256_file_in_pieces_equals_the_whole_files_digest(tmp_path: Path) -> None:
    data = bytes(range(256)) * 1000 + b"tail"  # not a multiple of the piece size
    path = tmp_path / "w.bin"
    path.write_bytes(data)
    want = hashlib.sha256(data).hexdigest()
    assert sha256_file(path, chunk=4096) == want
    assert sha256_file(str(path)) == want
    (tmp_path / "empty").write_bytes(b"")
    assert sha256_file(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()
    with pytest.raises(OSError):
        sha256_file(tmp_path / "absent")
