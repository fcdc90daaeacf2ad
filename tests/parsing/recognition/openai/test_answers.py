"""The block-level answer cache (issue 10: a rerun sends only blocks without an answer)."""

from __future__ import annotations

from pathlib import Path

from ocrstack.client import chat_body, tiny_png
from ocrstack.parsing.recognition.openai.answers import AnswerCache, request_key


def test_same_body_same_key_any_change_another() -> None:
    body = chat_body("minicpm-ocr", "OCR", tiny_png())
    assert request_key(body) == request_key(dict(reversed(list(body.items()))))
    assert request_key(body) != request_key(chat_body("minicpm-ocr", "OCR", tiny_png(), max_tokens=8))
    assert request_key(body) != request_key(chat_body("other-model", "OCR", tiny_png()))


def test_store_and_load(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path)
    body = chat_body("minicpm-ocr", "OCR", tiny_png())
    assert cache.load(body) is None
    cache.store(body, "text 文字", "length")
    assert AnswerCache(tmp_path).load(body) == ("text 文字", "length")
    assert not list(cache.dir.rglob("*.tmp"))


def test_unreadable_entry_counts_as_absent(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path)
    body = chat_body("minicpm-ocr", "OCR", tiny_png())
    path = cache.path(request_key(body))
    path.parent.mkdir(parents=True)
    path.write_text("{truncated", encoding="utf-8")
    assert cache.load(body) is None


def test_unwritable_root_is_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    cache = AnswerCache(blocker)  # answers/ cannot be created under a file
    cache.store(chat_body("m", "OCR", tiny_png()), "t", "stop")
    assert cache.stores == 0
