"""The text rules rewritten without backtracking (the hardening issue, item 1) keep their results.

Each was O(n^2) on one hostile shape (found by ``test_text_rules_linear.py``): newlines for the
Markdown line-start escape, unclosed ``<table``/``<!--``/``<caption>``/``<tr>`` for the lazy
span patterns, a digit run before a letter for the page-number pattern.
"""

from __future__ import annotations

from ocrstack.parsing.assembly.markdown import escape_text, html_table
from ocrstack.parsing.assembly.otsl import otsl_to_html, parse_otsl
from ocrstack.parsing.run.validate import strip_comments
from ocrstack.parsing.tables.born_digital import html_cells
from ocrstack.parsing.textlayer.plain import is_page_number


def test_line_start_escape_after_blank_lines() -> None:
    assert escape_text("\n\n  # x\n\t> q\n1. a") == "\n\n  \\# x\n\t\\> q\n1\\. a"
    assert escape_text("\n" * 50_000 + "# x") == "\n" * 50_000 + "\\# x"


def test_first_html_table_through_its_first_close() -> None:
    assert html_table("a <TABLE x><tr></tr></table> b </table>") == "<TABLE x><tr></tr></table>"
    assert html_table("<table <table <table") is None
    assert html_table("</table><table>") is None
    assert html_table("<tables></table>") is None


def test_comments_stripped_and_an_unclosed_one_kept() -> None:
    assert strip_comments("a<!-- x -->b<!--y-->c") == "abc"
    assert strip_comments("a<!-- x --> b <!-- open") == "a b <!-- open"
    assert strip_comments("<!-->x-->y") == "y"


def test_otsl_captions_taken_out_and_an_unclosed_one_kept() -> None:
    rows, caption = parse_otsl("<caption> Tab 1 </caption><fcel>a<caption>b</caption><nl>")
    assert caption == "Tab 1 b"
    assert rows == [[("fcel", "a")]]
    assert otsl_to_html("<caption>x<fcel>a") == "<table><tr><td>&lt;caption&gt;x</td><td>a</td></tr></table>"


def test_html_cells_of_spans_and_unclosed_rows() -> None:
    table = '<table><tr><td rowspan="2">a &amp; b</td><td colspan="3">c</td></tr><tr><td>d</td></tr></table>'
    assert html_cells(table) == [[("a & b", 2, 1), ("c", 1, 3)], [("d", 1, 1)]]
    assert html_cells("<tr><tr><td>x</td>") == []


def test_page_number_is_digits_without_letters() -> None:
    assert is_page_number("12") and is_page_number("- 3 -") and is_page_number("[4]")
    assert not is_page_number("iv") and not is_page_number("page 3") and not is_page_number("--")
    assert not is_page_number("1" * 100_000 + "a")
