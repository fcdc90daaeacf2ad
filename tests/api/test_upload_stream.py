"""The streaming multipart reader: the file goes to disk chunk by chunk and stops at the limit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ocrstack.api.uploads import TooLarge, receive
from ocrstack.core.errors import UsageError

BOUNDARY = "xYzZy"


class FakeRequest:
    """What :func:`receive` uses of a Starlette request: headers and an async body stream."""

    def __init__(
        self, body: bytes, chunk: int = 1000, content_type: str = f"multipart/form-data; boundary={BOUNDARY}"
    ):
        self.headers = {"content-type": content_type}  # no content-length: a chunked upload
        self.body, self.chunk, self.chunks_read = body, chunk, 0

    async def stream(self):
        for i in range(0, len(self.body), self.chunk):
            self.chunks_read += 1
            yield self.body[i : i + self.chunk]


def multipart(parts: list[tuple[str, str | None, bytes]]) -> bytes:
    out = b""
    for name, filename, data in parts:
        disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disp}\r\n\r\n".encode() + data + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


def test_file_and_fields_streamed_to_disk(tmp_path: Path) -> None:
    payload = bytes(range(256)) * 200  # 51 200 bytes, arrives in 52+ chunks
    req = FakeRequest(
        multipart([("dpi", None, b"150"), ("file", "../x.pdf", payload), ("pages", None, b"1-2")])
    )
    up = asyncio.run(receive(req, tmp_path / "up.part", max_bytes=100_000))
    assert up.path.read_bytes() == payload and up.size == len(payload) and up.filename == "../x.pdf"
    assert up.fields == {"dpi": ["150"], "pages": ["1-2"]}
    assert req.chunks_read > 50


def test_over_the_limit_stops_reading_and_removes_the_file(tmp_path: Path) -> None:
    req = FakeRequest(multipart([("file", "big.pdf", b"0" * 1_000_000)]))
    with pytest.raises(TooLarge, match="over the limit of 10000 bytes"):
        asyncio.run(receive(req, tmp_path / "up.part", max_bytes=10_000))
    assert not (tmp_path / "up.part").exists()
    assert req.chunks_read < 20  # stopped early, the rest of the body was never read


@pytest.mark.parametrize(
    ("body", "ctype", "words"),
    [
        (b"{}", "application/json", "not multipart/form-data"),
        (multipart([("dpi", None, b"1")]), None, "no file in the request"),
        (multipart([("file", "a.pdf", b"x"), ("file", "b.pdf", b"y")]), None, "one file per request"),
        (multipart([("dpi", None, b"9" * 5000), ("file", "a.pdf", b"x")]), None, "over 4096 bytes"),
    ],
)
def test_bad_bodies_are_usage_errors(tmp_path: Path, body: bytes, ctype: str | None, words: str) -> None:
    req = FakeRequest(body, content_type=ctype or f"multipart/form-data; boundary={BOUNDARY}")
    with pytest.raises(UsageError, match=words):
        asyncio.run(receive(req, tmp_path / "up.part", max_bytes=10_000))
    assert not (tmp_path / "up.part").exists()
