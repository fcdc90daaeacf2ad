"""Post-write validation (ocrstack.parsing.run.validate, guide 6) on hand-written Markdown and pages."""

from __future__ import annotations

from pathlib import Path

from ocrstack.core.results import Status
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.run.validate import split_pages, validate
from ocrstack.parsing.types import Block, Category


def _status(report, name):
    return next(c for c in report.checks if c.name == name)


def _page(index, *blocks, structured=True, error=None):
    return PageResult(index=index, size=(10, 10), blocks=list(blocks), structured=structured, error=error)


def test_empty_markdown_fails(tmp_path: Path):
    md = tmp_path / "a.md"
    md.write_text("<!-- page 1 -->\n\n<!-- empty text block: page 1, block 0 -->\n")
    r = validate(md, [_page(0, Block((0, 0, 1, 1), Category.TEXT, order=0))])
    assert _status(r, "non-empty").status is Status.FAIL and not r.ok
    assert "page 1 block 0 (text)" in _status(r, "empty-blocks").detail


def test_a_blank_document_is_valid_empty_output(tmp_path: Path):
    """No layout block on any page: nothing to read, so empty Markdown passes (issue 22
    item 6: a blank page exited 1 with "no content"); a failed page is still no blank page."""
    md = tmp_path / "a.md"
    md.write_text("<!-- page 1 -->\n\n<!-- page 2 -->\n")
    r = validate(md, [_page(0), _page(1)])
    assert _status(r, "non-empty").status is Status.PASS and r.ok
    assert "blank" in _status(r, "non-empty").detail
    r = validate(md, [_page(0), _page(1, error="server gave up")])
    assert _status(r, "non-empty").status is Status.FAIL and not r.ok


def test_raw_and_escaped_otsl_fail_naming_page_and_block(tmp_path: Path):
    md = tmp_path / "a.md"
    md.write_text("<!-- page 1 -->\n\nok\n\n<!-- page 2 -->\n\n&lt;otsl>&lt;fcel>x&lt;nl>\n")
    b = Block((0, 0, 1, 1), Category.TEXT, order=3, text="<otsl><fcel>x<nl>")
    r = validate(md, [_page(0, Block((0, 0, 1, 1), Category.TEXT, text="ok")), _page(1, b)])
    c = _status(r, "no-raw-otsl")
    assert c.status is Status.FAIL and c.detail == "page 2: block 3 (text)"


def test_tables_must_be_html_for_structured_and_warn_for_plain_ocr(tmp_path: Path):
    md = tmp_path / "a.md"
    md.write_text("<!-- page 1 -->\n\n<table><tr><td>1</td></tr></table>\n\n<!-- page 2 -->\n\na b\n")
    t1 = Block((0, 0, 1, 1), Category.TABLE, order=0, text="<otsl>..")
    t2 = Block((0, 0, 1, 1), Category.TABLE, order=4, text="a b")
    r = validate(md, [_page(0, t1), _page(1, t2)])
    assert (
        _status(r, "tables").status is Status.FAIL
        and "page 2: 1 table block(s) (4), 0 <table>" in _status(r, "tables").detail
    )
    r2 = validate(md, [_page(0, t1), _page(1, t2, structured=False)])
    assert _status(r2, "tables").status is Status.WARN and r2.ok


def test_failed_pages_fail_the_pages_check(tmp_path: Path):
    md = tmp_path / "a.md"
    md.write_text("<!-- page 1 -->\n\ntext\n")
    r = validate(md, [_page(0, Block((0, 0, 1, 1), Category.TEXT, text="text")), _page(1, error="timeout")])
    assert _status(r, "pages").status is Status.FAIL and "page 2: timeout" in _status(r, "pages").detail


def test_split_pages():
    assert split_pages("<!-- page 1 -->\na\n<!-- page 3 -->\nb") == {1: "\na\n", 3: "\nb"}
