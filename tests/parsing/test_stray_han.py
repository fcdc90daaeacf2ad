"""Issue 22 class 2: lone Han characters the recognizer reads into Latin-script pages are
dropped (with a warning); Chinese pages, CJK words and text-layer text are left alone."""

from __future__ import annotations

from ocrstack.parsing.lines.script import drop_stray_han, latin_share
from ocrstack.parsing.types import Block, Category

OCR = frozenset({"ocr"})


def _b(text: str, source: str = "ocr") -> Block:
    b = Block((0, 0, 10, 10), Category.TEXT)
    b.text, b.source = text, source
    return b


def test_lone_han_on_an_english_page_is_dropped_with_a_warning() -> None:
    blocks = [
        _b("General building notes: all dimensions in millimetres unless noted 马"),
        _b("区 Concrete grade C30 for footings and slabs"),
        _b("The layer text keeps 马 as it is", source="text-layer"),
    ]
    assert drop_stray_han(blocks, OCR) == 2
    assert blocks[0].text == "General building notes: all dimensions in millimetres unless noted"
    assert blocks[1].text == "Concrete grade C30 for footings and slabs"
    assert "stray CJK" in blocks[0].warnings[-1] and "马" in blocks[0].warnings[-1]
    assert blocks[2].text == "The layer text keeps 马 as it is" and not blocks[2].warnings


def test_cjk_words_and_chinese_pages_are_untouched() -> None:
    words = [_b("the word 中国 in an otherwise long English paragraph about shipping routes and ports")]
    assert drop_stray_han(words, OCR) == 0 and "中国" in words[0].text
    chinese = [_b("本文介绍 OCR 的部署"), _b("第 3 章 马")]
    assert latin_share([b.text for b in chinese]) < 0.95
    assert drop_stray_han(chinese, OCR) == 0 and chinese[1].text == "第 3 章 马"
