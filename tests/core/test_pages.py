"""The one ``<!-- page N -->`` writer/splitter shared by parse assembly, validation and verify."""

from __future__ import annotations

from ocrstack.core.pages import marker, split_pages
from ocrstack.parsing.assembly.markdown import render_document
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.types import Block, Category


def test_split_between_markers():
    assert split_pages("<!-- page 1 -->\na\n<!-- page 3 -->\nb") == {1: "\na\n", 3: "\nb"}
    assert split_pages("no markers") == {}
    assert split_pages("intro\n<!-- page 2 -->  \nx") == {2: "\nx"}


def test_marker_only_counts_on_its_own_line():
    assert split_pages("see <!-- page 9 --> inline\n<!-- page 1 -->\nt") == {1: "\nt"}


def test_round_trip_with_the_assembly():
    pages = [  # whole sentences: lowercase run-on text is joined across the page break
        PageResult(index=i, size=(10, 10), blocks=[Block((0, 0, 5, 5), Category.TEXT, text=f"Page {i}.")])
        for i in (0, 1, 4)
    ]
    md = render_document(pages).markdown
    assert md.startswith(marker(1))
    got = split_pages(md)
    assert sorted(got) == [1, 2, 5]
    assert [got[n].strip() for n in (1, 2, 5)] == ["Page 0.", "Page 1.", "Page 4."]
