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

from ocrstack.core.errors import InputError, UsageError

#: Cap per text field and on the number of text fields (options are short strings).
MAX_FIELD_BYTES = 4096
MAX_FIELDS = 64
FILE_FIELD = "file"
#: Extension written for each sniffed type (documents._sniff names).
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


async def receive(request, target: Path, max_bytes: int) -> Upload:  # noqa: ANN001 - starlette Request
    """Stream the multipart body of ``request``: the ``file`` part to ``target``, fields kept.

    Raises:
        UsageError: not multipart/form-data, no ``file`` part, several files, or too many/long fields.
        TooLarge: the file is over ``max_bytes`` (``target`` is removed).
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
    up = Upload()
    state: dict = {
        "headers": {},
        "name": None,
        "is_file": False,
        "buf": bytearray(),
        "fh": None,
        "hfield": b"",
    }
    errors: list[Exception] = []

    def on_part_begin() -> None:
        state.update(headers={}, name=None, is_file=False, buf=bytearray(), hfield=b"")

    def on_header_field(data: bytes, start: int, end: int) -> None:
        state["hfield"] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        key = state["hfield"].lower()
        state["headers"][key] = state["headers"].get(key, b"") + data[start:end]

    def on_header_end() -> None:
        state["hfield"] = b""

    def on_headers_finished() -> None:
        _, disp = parse_options_header(state["headers"].get(b"content-disposition", b""))
        state["name"] = disp.get(b"name", b"").decode("utf-8", "replace")
        if b"filename" in disp:
            if up.path is not None or state["name"] != FILE_FIELD:
                errors.append(
                    UsageError(
                        "one file per request, in the form field 'file'",
                        "send each document in its own request (POST /v1/jobs per file)",
                    )
                )
                return
            state["is_file"] = True
            up.filename = disp[b"filename"].decode("utf-8", "replace")
            up.path = target
            state["fh"] = open(target, "wb")  # noqa: SIM115 - closed in on_part_end / finally

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if errors:
            return
        if state["is_file"]:
            up.size += end - start
            if up.size > max_bytes:
                errors.append(
                    TooLarge(
                        f"{up.filename or 'upload'}: over the limit of {max_bytes} bytes",
                        "split the document or ask the operator to raise --max-upload-mb",
                    )
                )
                return
            state["fh"].write(data[start:end])
        else:
            state["buf"] += data[start:end]
            if len(state["buf"]) > MAX_FIELD_BYTES:
                errors.append(
                    UsageError(
                        f"form field {state['name']!r} is over {MAX_FIELD_BYTES} bytes",
                        "send short option values",
                    )
                )

    def on_part_end() -> None:
        if state["is_file"]:
            state["fh"].close()
            state["fh"] = None
        elif state["name"] and not errors:
            if sum(len(v) for v in up.fields.values()) >= MAX_FIELDS:
                errors.append(
                    UsageError(f"more than {MAX_FIELDS} form fields", "send only the options you need")
                )
                return
            up.fields.setdefault(state["name"], []).append(state["buf"].decode("utf-8", "replace"))

    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": on_part_begin,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
        },
    )
    try:
        async for chunk in request.stream():
            parser.write(chunk)
            if errors:
                raise errors[0]
        parser.finalize()
        if errors:
            raise errors[0]
    except Exception as exc:
        if state["fh"] is not None:
            state["fh"].close()
        target.unlink(missing_ok=True)
        if isinstance(exc, (UsageError, InputError)):
            raise
        raise UsageError(
            f"malformed multipart body ({type(exc).__name__})", "send a valid multipart/form-data request"
        ) from None
    if up.path is None:
        raise UsageError("no file in the request", "send the document as a form field named 'file'")
    return up
