"""Readable Markdown (issue 10 item 8), checked by rendering with a CommonMark renderer
(markdown-it-py): paragraphs from line geometry, joins across column and page breaks, end-of-line
hyphenation, CJK rows, list items, table-of-contents entries and the summary line.

The corpus checks read en_twocol_ltnews24 (two columns) and en_multicol_pari_refcard (three
columns) through the page memo of tests/support/parse_helpers.py.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from ocrstack.parsing.assembly.markdown import render_document, render_page, summary
from ocrstack.parsing.assembly.paragraphs import Vocabulary, join_rows
from ocrstack.parsing.lines.assign import SENTENCE_END, Line, assign_lines, join_lines
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.types import Block, Category

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py renders the checks")


def render(md: str) -> str:
    return markdown_it.MarkdownIt("commonmark").render(md)


def paras(md: str) -> list[str]:
    """Text of every rendered <p> (tags stripped, entities decoded, soft breaks as spaces)."""
    out = re.findall(r"<p>(.*?)</p>", render(md), re.DOTALL)
    return [html.unescape(re.sub(r"<[^>]+>", "", p)).replace("\n", " ") for p in out]


def L(x0, y0, x1, y1, text):
    return Line((x0, y0, x1, y1), text, 0.99)


def page(*blocks: Block, index: int = 0) -> PageResult:
    for n, b in enumerate(blocks):
        b.order = n
    return PageResult(index=index, size=(1654, 2339), blocks=list(blocks))


def T(text, bbox=(100, 100, 1500, 900), cat=Category.TEXT):
    return Block(bbox=bbox, category=cat, text=text)


# ------------------------------------------------------------------ paragraphs from geometry


def test_paragraph_breaks_come_from_indent_short_last_line_and_vertical_gap():
    rows = [
        L(100, 100, 1400, 130, "The first paragraph runs over"),
        L(100, 140, 1400, 170, "two full rows and ends on a"),
        L(100, 180, 700, 210, "short row."),  # short + sentence end
        L(100, 220, 1400, 250, "The second one has no indent"),
        L(100, 260, 1400, 290, "but ends on a full row without a stop"),
        L(140, 300, 1400, 330, "so the indented row starts the third,"),  # indent >= 1 row height
        L(100, 340, 1400, 370, "which goes on here"),
        L(100, 420, 1400, 450, "And a gap starts the fourth."),  # gap 50 > 0.8 * 30
    ]
    text = join_lines(rows)
    assert text.count("\n\n") == 3, text
    got = paras(render_page(page(T(text))).markdown)
    assert [p.split()[0] for p in got] == ["The", "The", "so", "And"]
    assert got[0] == "The first paragraph runs over two full rows and ends on a short row."


def test_rows_of_one_paragraph_stay_one_paragraph():
    rows = [
        L(100, 100 + 40 * k, 1400, 130 + 40 * k, f"row {k} of a paragraph that goes on") for k in range(6)
    ]
    assert "\n\n" not in join_lines(rows)
    assert len(paras(render_page(page(T(join_lines(rows)))).markdown)) == 1


def test_table_of_contents_entries_keep_title_and_page_number_on_one_line():
    """en_twocol_ltnews24 page 1: the contents read as two columns, titles then numbers."""
    rows = [
        L(116, 500, 520, 530, "LuaTeX support"),
        L(116, 540, 520, 570, "Unicode data"),
        L(116, 580, 700, 610, "More support for east European accents"),
        L(780, 500, 800, 530, "1"),
        L(780, 540, 800, 570, "1"),
        L(780, 580, 800, 610, "2"),
    ]
    text = join_lines(rows)
    got = paras(render_page(page(T(text))).markdown)
    assert got == ["LuaTeX support 1", "Unicode data 1", "More support for east European accents 2"]
    # the layout model boxes the numbers apart from the titles: joined before assignment
    titles = Block((110, 495, 710, 615), Category.TEXT)
    numbers = Block((775, 495, 805, 615), Category.TEXT)
    out = assign_lines([titles, numbers], rows)
    assert titles.text.split("\n\n") == got and numbers.text == "" and len(out) == 2
    # a lone number beside body text (no column of aligned numbers) is not joined to it
    lone = [L(100, 100, 700, 130, "a row of body text"), L(780, 100, 800, 130, "7")]
    left, right = Block((90, 90, 710, 140), Category.TEXT), Block((770, 90, 1400, 140), Category.TEXT)
    assign_lines([left, right], lone)
    assert (left.text, right.text) == ("a row of body text", "7")


def test_list_items_stay_items():
    rows = [
        L(100, 100, 1400, 130, "• the first item, which is long enough"),
        L(140, 140, 900, 170, "to wrap onto a second row"),
        L(100, 180, 900, 210, "• the second item"),
        L(100, 220, 900, 250, "1. a numbered one"),
    ]
    html_out = render(render_page(page(T(join_lines(rows)))).markdown)
    assert html_out.count("<li>") == 3, html_out
    assert "<li>the first item, which is long enough\nto wrap onto a second row</li>" in html_out


# ------------------------------------------------------------------ joining rows


def test_end_of_line_hyphenation_is_undone_when_the_word_goes_on_in_lowercase():
    v = Vocabulary()
    assert (
        join_rows("block-sorting text decompres-", "sion is fast", v)
        == "block-sorting text decompression is fast"
    )
    # a capital or a digit after the hyphen: hyphen kept, rows glued
    assert join_rows("encoded as UTF-", "8 text", v) == "encoded as UTF-8 text"
    # a dash between spaces is no hyphenation
    assert join_rows("one thing -", "another", v) == "one thing -\nanother"


def test_real_compounds_keep_their_hyphen():
    # the document writes "well-known" on one row elsewhere: the split one keeps its hyphen
    v = Vocabulary.of(["a well-known result", "other words"])
    assert join_rows("this is a well-", "known fact", v) == "this is a well-known fact"
    # the wordlist rule: "self-" compounds keep it when the closed form occurs nowhere
    assert join_rows("a self-", "contained set", Vocabulary()) == "a self-contained set"
    # ... but the document's own closed form wins ("wellbeing" written whole elsewhere)
    assert join_rows("their well-", "being", Vocabulary.of(["wellbeing"])) == "their wellbeing"
    # the page's other words settle a word the list does not know: "pre-processing" elsewhere
    v = Vocabulary.of(["pre-processing of pages"])
    assert join_rows("needs pre-", "processing", v) == "needs pre-processing"
    assert join_rows("needs pre-", "processing", Vocabulary()) == "needs preprocessing"


def test_cjk_rows_join_without_a_space():
    md = render_page(page(T("中文的第一行文字，\n第二行接着写。"))).markdown
    assert paras(md) == ["中文的第一行文字，第二行接着写。"]
    # Latin rows keep a (soft) space
    assert paras(render_page(page(T("first row\nsecond row"))).markdown) == ["first row second row"]


# ------------------------------------------------------------------ column and page breaks


def test_a_paragraph_cut_by_a_column_break_is_joined():
    left = T("The first column ends in the middle of a", bbox=(100, 100, 800, 2000))
    right = T("sentence that the second column finishes.\n\nA new paragraph.", bbox=(850, 100, 1550, 2000))
    got = paras(render_page(page(left, right)).markdown)
    assert got == [
        "The first column ends in the middle of a sentence that the second column finishes.",
        "A new paragraph.",
    ]
    # the next column may start with a command or a bracket: its first letter decides
    left2 = T("LuaTeX from version v0.87 no longer supports the", bbox=(100, 100, 800, 2000))
    right2 = T("\\write18 syntax to access system commands.", bbox=(850, 100, 1550, 2000))
    assert len(paras(render_page(page(left2, right2)).markdown)) == 1
    # a finished sentence, or a capital after it, is no continuation
    for a, b in (("Ends here.", "next starts lowercase"), ("no stop here", "But a capital")):
        assert len(paras(render_page(page(T(a), T(b))).markdown)) == 2


def test_a_paragraph_cut_by_a_page_break_is_joined_on_the_page_where_it_starts():
    p1 = page(T("Earlier.\n\nThe last paragraph of the page goes on on the"), index=0)
    p2 = page(T("next page, hyphen-\nated at the end of a row.\n\nThen another."), index=1)
    md = render_document([p1, p2]).markdown
    assert "goes on on the\nnext page, hyphenated at the end of a row." in md
    assert md.index("hyphenated") < md.index("<!-- page 2 -->") < md.index("Then another.")
    assert (
        paras(md)[1]
        == "The last paragraph of the page goes on on the next page, hyphenated at the end of a row."
    )


def test_summary_says_whether_anything_is_wrong():
    assert summary([], 0, Path("out/a.md")) == "0 errors, 0 warnings (see a.blocks.json)"
    assert summary(["x", "y"], 1, Path("out/a.md")) == "1 error, 2 warnings (see a.blocks.json)"
    failed = Block((0, 0, 10, 10), Category.TEXT, error="HTTP 500")
    issues = render_page(page(failed, T("Fine."))).issues
    assert summary(issues, 0, Path("a.md")) == "1 error, 0 warnings (see a.blocks.json)"


def test_parse_summary_line_counts_errors_and_warnings(tmp_path):
    from ocrstack.core.results import Check, Report, Status
    from ocrstack.parsing.run.outcomes import DocumentSummary, summary_line

    d = DocumentSummary(source=tmp_path / "a.pdf", markdown=tmp_path / "a.md", pages=2, cached=0, failed=1)
    d.issues = ["page 1 block 2 (text): empty output", "page 2 block 0 (table): plain"]
    d.validation = Report("validate a.md")
    d.validation.add(Check("non-empty", Status.PASS, "ok"))
    d.validation.add(Check("pages", Status.FAIL, "page 2: boom"))
    line = summary_line(d)
    # the failed page is the failed "pages" check: one error, not two
    assert line.endswith("1 failed, 0.00 pages/s, 1 error, 2 warnings (see a.blocks.json)"), line


# ------------------------------------------------------------------ real pages


def mid_sentence_breaks(md: str) -> list[tuple[str, str]]:
    """Consecutive rendered paragraphs where the first, of sentence length (5 words or more: a
    heading such as pari's "Character strings" is not cut), stops without sentence punctuation
    and the next starts in lowercase (its first letter, after a backslash or bracket): a
    paragraph broken in the middle of a sentence."""
    ps = paras(md)
    out = []
    for a, b in zip(ps, ps[1:], strict=False):
        letters = [c for c in b if c.isalnum()]
        lower = bool(letters) and letters[0].isalpha() and letters[0].islower()
        if len(a.split()) >= 5 and not SENTENCE_END.search(a.rstrip()) and lower:
            out.append((a[-40:], b[:40]))
    return out


@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize(
    ("name", "pageno", "min_paras"),
    [
        ("en_twocol_ltnews24.pdf", 0, 12),
        ("en_twocol_ltnews24.pdf", 1, 12),
        ("en_multicol_pari_refcard.pdf", 0, 1),
    ],
)
def test_multi_column_corpus_pages_render_without_mid_sentence_breaks(corpus, name, pageno, min_paras):
    from support.parse_helpers import parse

    result = parse(corpus, name, pageno)
    md = render_page(result).markdown
    assert mid_sentence_breaks(md) == []
    assert len(paras(md)) >= min_paras
    if (name, pageno) == ("en_twocol_ltnews24.pdf", 0):  # its contents: entry and page number together
        got = paras(md)
        for entry in ("support 1", "Unicode data 1", "Changes in Graphics 2", "Changes in Tools 2"):
            assert any(p.endswith(entry) and len(p) < 60 for p in got), (entry, got[:12])


def test_a_label_of_stacked_single_characters_is_one_word():
    """Issue 11 item 4: an exam's binding-margin label, upright characters one below the other,
    each found as a line of its own by the detector."""
    name = [Line((82, 498 + 42 * k, 122, 530 + 42 * k), ch, 0.99) for k, ch in enumerate("NAME")]
    assert join_lines(list(reversed(name))) == "NAME"
    cjk = [Line((60, 300 + 40 * k, 96, 336 + 40 * k), ch, 0.99) for k, ch in enumerate("姓名")]
    assert join_lines(cjk) == "姓名"


def test_single_characters_that_are_not_one_stack_keep_their_lines():
    row = [Line((100 + 40 * k, 100, 130 + 40 * k, 130), ch, 0.99) for k, ch in enumerate("ABC")]
    assert join_lines(row) == "A B C"  # side by side: one row of three
    apart = [Line((100, 100, 130, 130), "1", 0.99), Line((400, 160, 430, 190), "2", 0.99)]
    assert join_lines(apart).split() == ["1", "2"]  # one below the other, not overlapping: no stack
    word = [Line((100, 100, 130, 130), "x", 0.99), Line((100, 140, 300, 170), "longer line", 0.99)]
    assert join_lines(word).split() == ["x", "longer", "line"]
    assert join_lines([Line((100, 100, 130, 130), "x", 0.99)]) == "x"
