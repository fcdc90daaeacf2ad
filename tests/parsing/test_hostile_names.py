"""Issue 25 item 9: real-world file names and unencodable text do not crash a CLI batch.

A non-UTF-8 file name (its byte comes back from ``os.fsdecode`` as a surrogate), a legal
240-character name and text with an unpaired UTF-16 surrogate (from a PDF's text layer or a
recognizer's JSON ``"\\ud800"``) each crashed a write: blocks.json (UnicodeEncodeError), the
lock's temp file (File name too long), the page cache; the rest of the batch was never parsed.
Parsed with ``ocrstack parse`` in this process against a fake OpenAI server on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from ocrstack.cli import main
from ocrstack.parsing import outputs
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.inputs import paper

pytestmark = [pytest.mark.server]  # a fake server on 127.0.0.1


def _parse(inputs: list[str], out: Path, url: str) -> tuple[int, str]:
    args = ["parse", *inputs, "--recognizer", "openai", "--layout", "none", "--no-progress"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([*args, "--server-url", url, "-o", str(out)])
    return code, err.getvalue()


def test_a_batch_with_a_non_utf8_and_a_240_character_name_is_parsed_whole(tmp_path: Path) -> None:
    src = os.fsencode(tmp_path / "in")
    os.mkdir(src)
    names = [b"caf\xe9.png", b"x" * 236 + b".png", b"plain.png"]
    try:
        for name in names:
            paper((120, 60)).save(os.path.join(src, name))
    except OSError as exc:  # a file system that takes only UTF-8 names (macOS APFS)
        pytest.skip(f"this file system refuses the names: {exc}")
    out = tmp_path / "out"
    with FakeOpenAIServer() as srv:
        code, err = _parse([os.fsdecode(os.path.join(src, n)) for n in names], out, srv.url)
    assert code == 0, err
    written = set(os.listdir(os.fsencode(out)))
    for name in names:
        stem = name.rsplit(b".", 1)[0]
        assert {stem + b".md", stem + b".blocks.json"} <= written, name
    blocks = json.loads((out / os.fsdecode(b"caf\xe9.blocks.json")).read_text(encoding="utf-8"))
    assert "caf\ufffd.png" in blocks["source"]  # the undecodable byte, shown as U+FFFD


def test_an_unpaired_surrogate_in_block_text_is_written_as_replacement_character(tmp_path: Path) -> None:
    doc = tmp_path / "page.png"
    paper((120, 60)).save(doc)
    out = tmp_path / "out"
    with FakeOpenAIServer(reply=lambda body, size: "left \ud800 right") as srv:  # JSON "\ud800"
        code, err = _parse([str(doc)], out, srv.url)
        assert code == 0, err
        assert "left \ufffd right" in (out / "page.md").read_text(encoding="utf-8")
        code, err = _parse([str(doc)], out, srv.url)  # the page cache was written and reads back
    assert code == 0, err


def test_atomic_write_text_replaces_only_surrogates(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    outputs.atomic_write_json(path, {"text": "a\udce9 b\ud83d 😀 é"})
    assert json.loads(path.read_text(encoding="utf-8")) == {"text": "a\ufffd b\ufffd 😀 é"}
