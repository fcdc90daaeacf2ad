"""Streaming multipart uploads: the request body goes to disk in chunks, never whole into memory.

:func:`receive` parses ``multipart/form-data`` with python-multipart's push parser while the
body arrives, writes the ``file`` part to a temporary file in the data directory, counts bytes
and stops at the limit (413). Text fields (options) are kept, each capped at
:data:`MAX_FIELD_BYTES`. :func:`safe_name` turns the client's file name into a harmless base
name: the client's name never becomes a path (no traversal).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from ocrstack.api import storage
from ocrstack.core.errors import InputError, UsageError

#: Cap per text field and on the number of text fields (options are short strings).
MAX_FIELD_BYTES = 4096
MAX_FIELDS = 64
FILE_FIELD = "file"
#: Extension written for each sniffed type (:func:`ocrstack.parsing.documents.sniff` names).
SUFFIX = {"pdf": ".pdf", "png": ".png", "jpeg": ".jpg", "tiff": ".tif", "webp": ".webp", "bmp": ".bmp"}


class TooLarge(InputError):
    """The upload exceeds the size limit (the app answers 413)."""


@dataclass
class Upload:
    """What :func:`receive` got: the file on disk, the client's name and the text fields."""

    path: Path | None = None
    filename: str = ""
    size: int = 0
    fields: dict[str, list[str]] = field(default_factory=dict)


def safe_name(filename: str, kind: str) -> str:
    """A base name for the stored upload: the client's stem with every character other than letters,
    digits, ``_``, ``.``, ``-`` and inner spaces replaced by ``_`` (so ``NAME.md`` is named as a local
    ``ocrstack parse`` would name it), at most 100 characters, no leading dots, plus the suffix of
    the sniffed type. Directory parts (``/`` or ``\\``) are dropped; an empty result becomes
    ``document``."""
    base = PureWindowsPath(PurePosixPath(filename or "").name).name.lstrip(".")
    stem = base.rsplit(".", 1)[0] if "." in base else base
    stem = re.sub(r"[^\w .-]+", "_", stem).strip(" ").lstrip("._-")[:100].strip(" ") or "document"
    return stem + SUFFIX.get(kind, ".bin")


class _Parts:
    """python-multipart callbacks for one body: the ``file`` part streamed to ``target`` (at most
    ``max_bytes``), each text field kept (capped); the first problem is kept in ``errors`` and
    stops further writing (the parser's callbacks cannot raise through it cleanly)."""

    def __init__(self, target: Path, max_bytes: int) -> None:
        self.up = Upload()
        self.target, self.max_bytes = target, max_bytes
        self.errors: list[Exception] = []
        self.fh = None
        self.on_part_begin()

    def callbacks(self) -> dict:
        """The callback table for :class:`MultipartParser`."""
        names = ("part_begin", "header_field", "header_value", "header_end", "headers_finished")
        return {f"on_{n}": getattr(self, f"on_{n}") for n in (*names, "part_data", "part_end")}

    def on_part_begin(self) -> None:
        self.headers: dict[bytes, bytes] = {}
        self.name: str | None = None
        self.is_file = False
        self.buf = bytearray()
        self.hfield = b""

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.hfield += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        key = self.hfield.lower()
        self.headers[key] = self.headers.get(key, b"") + data[start:end]

    def on_header_end(self) -> None:
        self.hfield = b""

    def on_headers_finished(self) -> None:
        _, disp = parse_options_header(self.headers.get(b"content-disposition", b""))
        self.name = disp.get(b"name", b"").decode("utf-8", "replace")
        if b"filename" not in disp:
            return
        if self.up.path is not None or self.name != FILE_FIELD:
            self.errors.append(
                UsageError(
                    "one file per request, in the form field 'file'",
                    "send each document in its own request (POST /v1/jobs per file)",
                )
            )
            return
        self.is_file = True
        self.up.filename = disp[b"filename"].decode("utf-8", "replace")
        self.up.path = self.target
        self.fh = open(self.target, "wb")  # closed in on_part_end, or by close() on an error

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self.errors:
            return
        if not self.is_file:
            self.buf += data[start:end]
            if len(self.buf) > MAX_FIELD_BYTES:
                self.errors.append(
                    UsageError(
                        f"form field {self.name!r} is over {MAX_FIELD_BYTES} bytes",
                        "send short option values",
                    )
                )
            return
        self.up.size += end - start
        if self.up.size > self.max_bytes:
            self.errors.append(
                TooLarge(
                    f"{self.up.filename or 'upload'}: over the limit of {self.max_bytes} bytes",
                    "split the document or ask the operator to raise --max-upload-mb",
                )
            )
            return
        self.fh.write(data[start:end])

    def on_part_end(self) -> None:
        if self.is_file:
            self.close()
        elif self.name and not self.errors:
            if sum(len(v) for v in self.up.fields.values()) >= MAX_FIELDS:
                self.errors.append(
                    UsageError(f"more than {MAX_FIELDS} form fields", "send only the options you need")
                )
                return
            self.up.fields.setdefault(self.name, []).append(self.buf.decode("utf-8", "replace"))

    def close(self) -> None:
        """Close the file part's handle, if one is open."""
        if self.fh is not None:
            self.fh.close()
            self.fh = None


def _check_headers(request: Request, max_bytes: int) -> bytes:
    """The multipart boundary of ``request``.

    Raises:
        UsageError: not multipart/form-data.
        TooLarge: a declared ``Content-Length`` far over ``max_bytes``.
    """
    ctype, params = parse_options_header(request.headers.get("content-type", ""))
    boundary = params.get(b"boundary")
    if ctype != b"multipart/form-data" or not boundary:
        raise UsageError(
            "the request is not multipart/form-data", "send the document as a form field named 'file'"
        )
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > max_bytes + 64 * 1024:
        raise TooLarge(
            f"upload of {int(length)} bytes is over the limit of {max_bytes} bytes",
            "split the document or ask the operator to raise --max-upload-mb",
        )
    return boundary


async def receive(request: Request, target: Path, max_bytes: int) -> Upload:
    """Stream the multipart body of ``request``: the ``file`` part to ``target``, fields kept.

    Raises:
        UsageError: not multipart/form-data, no ``file`` part, several files, or too many/long fields.
        TooLarge: the file is over ``max_bytes`` (``target`` is removed).
        DiskFull: the data dir has no space left for the file (the app answers 507).
    """
    parts = _Parts(target, max_bytes)
    parser = MultipartParser(_check_headers(request, max_bytes), parts.callbacks())
    try:
        async for chunk in request.stream():
            parser.write(chunk)
            if parts.errors:
                raise parts.errors[0]
        parser.finalize()
        if parts.errors:
            raise parts.errors[0]
    except Exception as exc:
        parts.close()
        target.unlink(missing_ok=True)
        if isinstance(exc, (UsageError, InputError)):
            raise
        if storage.is_full(exc):  # the server's problem, not a malformed body (issue 25 item 3)
            raise storage.refusal("storing the upload") from None
        raise UsageError(
            f"malformed multipart body ({type(exc).__name__})", "send a valid multipart/form-data request"
        ) from None
    if parts.up.path is None:
        raise UsageError("no file in the request", "send the document as a form field named 'file'")
    return parts.up
