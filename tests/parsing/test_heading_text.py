"""Issue 22 class 8: equations and sentences labelled title are written as paragraphs, not
headings; real headings (numbered, short, the document title) stay headings."""

from __future__ import annotations

from ocrstack.parsing.assembly.heading_text import heading_like
from ocrstack.parsing.assembly.markdown import render_page
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.types import Block, Category


def _title(text: str, label: str = "") -> Block:
    return Block((100, 100, 900, 140), Category.TITLE, text=text, label=label)


def test_equations_and_sentences_are_not_headings() -> None:
    assert not heading_like("MulWordByXpowD k, vk(x)) = (x^k * vk(x)) mod p(x)")
    assert not heading_like("bzcat (or bzip2 -dc) decompresses all specified files to the standard output.")
    assert not heading_like(" ".join(["word"] * 17))
    for real in ("3.2 Reading order", "Introduction", "A. Appendix: the data", "What is a CRC?", "Results."):
        assert heading_like(real), real


def test_render_writes_a_sentence_title_as_a_paragraph() -> None:
    page = PageResult(index=0, size=(1000, 1400), blocks=[_title("x = a + b")])
    page.blocks.append(_title("2 Methods"))
    for k, b in enumerate(page.blocks):
        b.order = k
    md = render_page(page).markdown
    assert "## 2 Methods" in md and "## x = a + b" not in md and "x = a + b" in md
