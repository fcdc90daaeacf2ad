"""Markdown assembly (ocrstack.parsing.assembly.markdown): every rule of issue 3 step 4 on hand-made pages."""

from __future__ import annotations

import pytest

from ocrstack.parsing.assembly.markdown import attach_captions, escape_text, render_document, render_page
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.types import Block, Category


def _page(blocks, structured=False, images=None, index=0):
    for n, b in enumerate(blocks):
        b.order = n
    return PageResult(
        index=index, size=(1000, 1400), blocks=blocks, structured=structured, images=images or {}
    )


def B(cat, text="", bbox=(100, 100, 900, 200), label=""):
    return Block(bbox=bbox, category=cat, text=text, label=label)


def test_titles_become_headings_and_doc_title_is_level_one():
    md = render_page(
        _page([B(Category.TITLE, "Doc", label="doc_title"), B(Category.TITLE, "Intro\nmore")])
    ).markdown
    assert md.splitlines()[0] == "# Doc"
    assert "## Intro more" in md


def test_stray_less_than_is_escaped_so_following_text_survives():
    md = render_page(_page([B(Category.TEXT, "if a <b and c > d then x")])).markdown
    assert "&lt;b and c > d then x" in md
    assert "<b" not in md


def test_escape_text_neutralises_markdown_line_starts_and_entities():
    assert escape_text("# not a heading") == "\\# not a heading"
    assert escape_text("- item") == "\\- item"
    assert escape_text("AT&T &amp; co") == "AT&T &amp;amp; co"


def test_formula_is_display_math_only_for_structured_recognizers():
    f = B(Category.FORMULA, "\\[ E = mc^2 \\]")
    assert "$$\nE = mc^2\n$$" in render_page(_page([f], structured=True)).markdown
    plain = render_page(_page([B(Category.FORMULA, "E = mc2")], structured=False)).markdown
    assert "$$" not in plain and "E = mc2" in plain


def test_otsl_table_becomes_html_table():
    pytest.importorskip("ocrstack.parsing.assembly.otsl")
    t = B(Category.TABLE, "<otsl><fcel>a<fcel>b<nl><fcel>1<lcel><nl></otsl>")
    md = render_page(_page([t], structured=True)).markdown
    assert "<table>" in md and "colspan" in md and "<otsl>" not in md


def test_plain_ocr_table_is_text_with_the_recognizer_warning_in_issues():
    t = B(Category.TABLE, "a b\n1 2")
    t.warnings.append("table read as plain OCR text")
    a = render_page(_page([t], structured=False))
    assert "<table" not in a.markdown and "1 2" in a.markdown
    assert any("plain OCR text" in i for i in a.issues)


def test_structured_table_without_structure_is_flagged():
    a = render_page(_page([B(Category.TABLE, "just words")], structured=True))
    assert any("without OTSL" in i for i in a.issues)


def test_figure_is_linked_and_caption_kept_next_to_it():
    fig = B(Category.FIGURE, "", bbox=(100, 100, 900, 600))
    body = B(Category.TEXT, "Body text.", bbox=(100, 700, 900, 800))
    cap = B(Category.CAPTION, "Figure 1: a cat", bbox=(100, 610, 900, 650))
    # reading order put the caption after the body text: it must move back to its figure
    page = _page([fig, body, cap], images={0: "x_files/p0001-b00.png"})
    md = render_page(page).markdown
    assert (
        md.index("![figure, page 1](x_files/p0001-b00.png)")
        < md.index("Figure 1: a cat")
        < md.index("Body text.")
    )


def test_table_caption_above_stays_above():
    cap = B(Category.CAPTION, "Table 2: numbers", bbox=(100, 100, 900, 140))
    tab = B(Category.TABLE, "1 2", bbox=(100, 150, 900, 400))
    out = attach_captions([tab, cap], 1400)
    assert out == [cap, tab]


def test_paratext_dropped_unless_kept():
    blocks = [B(Category.HEADER, "Running head"), B(Category.TEXT, "Body"), B(Category.PAGE_NUMBER, "7")]
    a = render_page(_page(blocks))
    assert "Running head" not in a.markdown and "7" not in a.markdown and a.dropped_paratext == 2
    kept = render_page(
        _page([B(Category.HEADER, "Running head"), B(Category.TEXT, "Body")]), keep_paratext=True
    )
    assert "Running head" in kept.markdown


def test_empty_block_is_flagged_in_the_report_not_as_markdown_noise():
    a = render_page(_page([B(Category.TEXT, "   "), B(Category.TEXT, "ok")]))
    assert "<!--" not in a.markdown and a.markdown.strip() == "ok"  # issue 22 class 10
    assert a.issues == ["page 1 block 0 (text): empty output"]


def test_document_has_page_markers_in_page_order_and_failed_pages_are_marked():
    p2 = _page([B(Category.TEXT, "Second.")], index=1)
    p1 = _page([B(Category.TEXT, "First.")], index=0)
    bad = PageResult(index=2, size=(0, 0), error="boom --")
    md = render_document([p2, bad, p1]).markdown
    assert md.index("<!-- page 1 -->") < md.index("First.") < md.index("<!-- page 2 -->")
    assert md.index("<!-- page 2 -->") < md.index("Second.")
    assert "<!-- page 3 failed: boom - - -->" in md


def test_less_than_in_latex_cannot_open_a_tag():
    md = render_page(_page([B(Category.FORMULA, "$$ a<b, c</d $$")], structured=True)).markdown
    assert md == "$$\na< b, c< /d\n$$"


@pytest.mark.parametrize(
    "text",
    [
        "a *bold* and _under_ and __both__ here",
        "code `x = 1` and ``y``",
        "# not a heading",
        "[link](http://example.com) ~~struck~~",
        "snake_case_name * 2 and C:\\path\\*",
        "1. not a list\n- nor this\n> nor a quote",
        "x <y & z &amp; w",
    ],
)
def test_rendering_significant_text_round_trips_as_literal_text(text):
    """Rendered with a CommonMark renderer (markdown-it-py), escaped OCR text shows exactly
    the characters read: no emphasis, code span, link, heading, list or tag appears."""
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py renders the check")
    import html
    import re

    rendered = markdown_it.MarkdownIt("commonmark").enable("strikethrough").render(escape_text(text))
    assert re.findall(r"<(?!/?p>)[^>]+>", rendered) == [], rendered  # only paragraphs
    plain = html.unescape(re.sub(r"</?p>", "", rendered)).strip()
    assert plain == text.strip()
