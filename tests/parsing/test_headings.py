"""Headings the layout model read as text are found from the text layer's fonts
(:mod:`ocrstack.parsing.textlayer.headings`), and a title that is a contents entry is text
(:func:`ocrstack.parsing.lines.assign.assign_lines`)."""

from __future__ import annotations

import re

import pytest

from ocrstack.cli import main
from ocrstack.parsing.lines.assign import Line, assign_lines
from ocrstack.parsing.textlayer import headings
from ocrstack.parsing.types import Block, Category

BODY = frozenset({"LMRoman10-Regular"})
SANS = frozenset({"LMSans12-Oblique"})


def _page():
    """A titled section, an untitled one in the same font, a bold lead-in and body text."""
    lines = [
        Line((0, 0, 200, 30), "Unicode data", 1.0),
        Line((0, 40, 600, 65), "As noted in LaTeX News 22, the release of LaTeX introduced", 1.0),
        Line((0, 100, 200, 130), "LuaTEX support", 1.0),
        Line((0, 140, 600, 165), "This release refines the LuaTEX support introduced in", 1.0),
        Line((0, 200, 200, 225), "Note:", 1.0),
        Line((0, 240, 200, 265), "Changes in Tools.", 1.0),
    ]
    fonts = [SANS, BODY, SANS, BODY, frozenset({"LMRoman10-Bold"}), SANS]
    blocks = [
        Block((0, 0, 200, 30), Category.TITLE),
        Block((0, 40, 600, 65), Category.TEXT),
        Block((0, 100, 200, 130), Category.TEXT),
        Block((0, 140, 600, 165), Category.TEXT),
        Block((0, 200, 200, 225), Category.TEXT),
        Block((0, 240, 200, 265), Category.TEXT),
    ]
    return blocks, lines, fonts


def test_a_one_line_block_in_the_font_of_the_pages_titles_is_a_title():
    blocks, lines, fonts = _page()
    headings.promote(blocks, lines, fonts)
    assert [b.category for b in blocks] == [
        Category.TITLE,
        Category.TEXT,
        Category.TITLE,  # "LuaTEX support": the titles' font
        Category.TEXT,
        Category.TEXT,  # another font than the titles'
        Category.TEXT,  # ends like a sentence
    ]
    assert blocks[2].warnings == ["text read as a title: one line in the font of the page's titles"]


def test_nothing_is_promoted_without_a_title_or_when_titles_use_the_body_font():
    blocks, lines, fonts = _page()
    blocks[0].category = Category.TEXT
    headings.promote(blocks, lines, fonts)
    assert [b.category for b in blocks].count(Category.TITLE) == 0
    blocks, lines, fonts = _page()
    fonts = [BODY if f == SANS else f for f in fonts]  # titles set in the body font: no signal
    headings.promote(blocks, lines, fonts)
    assert [b.category for b in blocks].count(Category.TITLE) == 1


def test_a_two_line_block_in_the_titles_font_stays_text():
    blocks, lines, fonts = _page()
    lines.insert(3, Line((0, 131, 200, 160), "and more", 1.0))
    fonts.insert(3, SANS)
    blocks[2] = Block((0, 100, 200, 160), Category.TEXT)
    headings.promote(blocks, lines, fonts)
    assert blocks[2].category is Category.TEXT


def test_a_title_that_is_a_contents_entry_with_its_page_number_is_text():
    # en_twocol_ltnews24: rapid-layout labelled the last contents entry a title
    entries = ["LuaTEX support", "Unicode data", "Improving support for Unicode engines"]
    lines, blocks = [], []
    for n, title in enumerate(entries):
        y = 40 * n
        lines += [Line((0, y, 300, y + 25), title, 1.0), Line((600, y, 615, y + 25), str(n + 1), 1.0)]
        blocks.append(Block((0, y, 620, y + 25), Category.TITLE if n == 2 else Category.TEXT))
    blocks.append(Block((0, 200, 620, 230), Category.TITLE))
    lines.append(Line((0, 200, 300, 230), "Unicode data", 1.0))  # a real heading
    assign_lines(blocks, lines)
    assert blocks[2].text == "Improving support for Unicode engines 3" and blocks[2].category is Category.TEXT
    assert blocks[2].warnings == ["title read as text: it is a contents entry ending with its page number"]
    assert blocks[3].category is Category.TITLE


@pytest.mark.corpus
def test_ltnews24_headings_are_the_sections_its_contents_lists(corpus, tmp_path):
    # the expected headings are the page's own table of contents (its text layer), in order
    rc = main(["parse", str(corpus / "en_twocol_ltnews24.pdf"), "-o", str(tmp_path), "--no-progress"])
    assert rc == 0
    md = (tmp_path / "en_twocol_ltnews24.md").read_text(encoding="utf-8")
    page1 = md.split("<!-- page 2 -->")[0]
    contents = [
        "LuaTEX support",
        "Unicode data",
        "More support for east European accents",
        "Changes in Graphics",
        "Changes in Tools",
        "Improving support for Unicode engines",
    ]
    truth = (corpus / "en_twocol_ltnews24.txt").read_text(encoding="utf-8")
    assert all(re.search(rf"^{re.escape(c)} \d$", truth, re.M) for c in contents)
    found = re.findall(r"^## (.+)$", md, re.M)
    assert found == ["LATEX News", "Contents", *contents]
    assert "## Contents" in page1 and "\nImproving support for Unicode engines 2\n" in page1
