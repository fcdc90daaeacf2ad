"""Inputs of ``ocrstack parse``: files and directories to a file list, file type from the first
bytes, the input's sha256 (the resume cache key's input part).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path

from ocrstack.core.digest import sha256_file
from ocrstack.core.errors import InputError

PDF_SUFFIXES = frozenset({".pdf"})
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp"})
SUPPORTED_SUFFIXES = PDF_SUFFIXES | IMAGE_SUFFIXES
"""File name suffixes picked up from directories (compared case-insensitively)."""

_PDF_MAGIC = b"%PDF-"
_PDF_MAGIC_WINDOW = 1024  # PDF 1.7 Annex H.3: the header may follow up to 1024 bytes of junk


def expand_inputs(inputs: Sequence[Path | str]) -> list[Path]:
    """Turn the CLI's input arguments into a list of absolute file paths.

    Files are kept in argument order (whatever their suffix; the content decides the loader,
    see :func:`iter_pages`). Directories are walked recursively, entries sorted by name at each
    level, hidden entries (names starting with ``.``) skipped, symlinked directories not
    followed, and only files whose suffix is in :data:`SUPPORTED_SUFFIXES` kept. Relative paths
    are made absolute against the current working directory (issue 3: the guide's
    relative-path pitfall must not exist). A file reached twice is listed once.

    Raises:
        InputError: a path does not exist, no input was given, or a directory holds no
            supported file; the message names the path and the fix.
    """
    if not inputs:
        raise InputError("no input given", "pass one or more PDF/image files or directories")
    seen: set[Path] = set()
    result: list[Path] = []

    def add(path: Path) -> None:
        if path not in seen:
            seen.add(path)
            result.append(path)

    for raw in inputs:
        path = Path(raw).expanduser().absolute()
        if path.is_dir():
            found = _walk_dir(path)
            if not found:
                raise InputError(
                    f"{path}: directory holds no supported input file",
                    f"put PDF or image files ({', '.join(sorted(SUPPORTED_SUFFIXES))}) in it or pass files",
                )
            for item in found:
                add(item)
        elif path.is_file():
            add(path)
        elif path.exists():
            raise InputError(
                f"{path}: not a regular file or directory", "pass a PDF, an image or a directory"
            )
        else:
            raise InputError(
                f"{path}: no such file or directory",
                f"check the path (relative paths are resolved against {Path.cwd()})",
            )
    return result


def _walk_dir(root: Path) -> list[Path]:
    """Supported files under ``root``, depth-first, sorted by name at each level."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            if path.suffix.lower() in SUPPORTED_SUFFIXES and path.is_file():
                found.append(path)
    return found


def file_sha256(path: Path | str) -> str:
    """Hex sha256 of the file's bytes (the resume cache key's input part), read in chunks.

    Results are memoised per (absolute path, size, mtime in ns), so the pipeline and
    :func:`iter_pages` hashing the same unchanged file read it once.

    Raises:
        InputError: the file cannot be read.
    """
    try:
        absolute = Path(path).absolute()
        st = absolute.stat()
        return _sha256_cached(str(absolute), st.st_size, st.st_mtime_ns)
    except OSError as exc:
        raise InputError(
            f"{path}: cannot read ({exc.strerror})", "check the file exists and is readable"
        ) from exc


@functools.lru_cache(maxsize=256)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(path)


_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"II+\x00", "tiff"),  # BigTIFF
    (b"MM\x00+", "tiff"),
    (b"BM", "bmp"),
)


def sniff(path: Path) -> str:
    """Type from the first bytes: ``pdf``, ``png``, ``jpeg``, ``tiff``, ``webp``, ``bmp``, ``""``.

    Image signatures are checked first (a PNG text chunk may contain ``%PDF-``); then the PDF
    header, which may follow up to 1024 bytes of junk (PDF 1.7 reference, Annex H.3).

    Raises:
        InputError: missing, unreadable or empty file.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(_PDF_MAGIC_WINDOW)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", "check the path") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})", "check permissions") from exc
    if not head:
        raise InputError(f"{path}: file is empty (0 bytes)", "re-export or re-download the document")
    for magic, kind in _IMAGE_MAGIC:
        if head.startswith(magic):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if _PDF_MAGIC in head:
        return "pdf"
    return ""


def kind(path: Path) -> str:
    """``"pdf"`` or ``"image"`` from the file's first bytes (see :func:`sniff`).

    Raises:
        InputError: missing, unreadable or empty file, or a ``.pdf`` that is not a PDF.
    """
    kind = sniff(path)
    if kind == "pdf":
        return "pdf"
    if not kind and path.suffix.lower() in PDF_SUFFIXES:
        raise InputError(
            f"{path}: not a PDF (no %PDF- header)",
            "re-export or re-download the document; it may be truncated",
        )
    return "image"
