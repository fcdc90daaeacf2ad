"""Issue 22 class 1: running heads, footers and page numbers the layout model labelled text are
dropped by position and repetition across the document (and kept with --keep-paratext)."""

from __future__ import annotations

from ocrstack.parsing.assembly.markdown import render_document, render_page
from ocrstack.parsing.assembly.running import min_repeats, running_blocks
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.types import Block, Category

H = 1000  # page height in pixels: the margin bands are y < 80 and y > 920


def _block(cat: Category, text: str, y0: float, y1: float, x0: float = 100, x1: float = 900) -> Block:
    b = Block((x0, y0, x1, y1), cat)
    b.text = text
    return b


def _page(index: int, *blocks: Block) -> PageResult:
    for k, b in enumerate(blocks):
        b.order = k
    return PageResult(index=index, size=(800, H), blocks=list(blocks))


def _book(pages: int) -> list[PageResult]:
    return [
        _page(
            i,
            _block(Category.TEXT, "CHAPTER 2. THE HARBOUR", 30, 60),  # running head labelled text
            _block(Category.TEXT, f"Body paragraph number {i} of the chapter, with its own words.", 200, 600),
            _block(Category.TEXT, f"Journal of Examples {2020 + i}, vol. 3", 940, 970),  # footer, year varies
        )
        for i in range(pages)
    ]


def test_a_running_head_and_footer_repeated_across_pages_are_dropped() -> None:
    doc = render_document(_book(5))
    assert "CHAPTER 2" not in doc.markdown and "Journal of Examples" not in doc.markdown
    assert doc.markdown.count("Body paragraph number") == 5 and doc.dropped_paratext == 10
    kept = render_document(_book(5), keep_paratext=True)
    assert kept.markdown.count("CHAPTER 2. THE HARBOUR") == 5


def test_a_lone_corner_page_number_and_a_footer_beside_a_labelled_one() -> None:
    page = _page(
        0,
        _block(Category.TEXT, "Main text of a single page that says something useful.", 200, 600),
        _block(Category.TEXT, "- 17 -", 950, 980, 700, 760),  # a lone page number labelled text
        _block(Category.TEXT, "Proc. of Things 2024", 945, 975, 100, 300),  # text beside a footer
        _block(Category.FOOTER, "doi:10.1/abc", 948, 972, 400, 600),
    )
    md = render_page(page).markdown
    assert md.strip() == "Main text of a single page that says something useful."


def test_body_text_and_one_off_margin_text_stay() -> None:
    pages = _book(5)
    pages[2].blocks.append(_block(Category.TEXT, "A note only on this page", 40, 70))
    pages[2].blocks[-1].order = 3
    assert 3 not in running_blocks(pages).get(2, set())
    # text in the margin band that repeats on too few pages stays
    assert min_repeats(2) == 2 and min_repeats(12) == 4
    two = [
        _page(0, _block(Category.TEXT, "Only here", 30, 60)),
        _page(1, _block(Category.TEXT, "Body", 300, 400)),
    ]
    assert "Only here" in render_document(two).markdown


def test_a_side_stamp_set_top_to_bottom_in_the_margin_is_dropped() -> None:
    """A repository's download stamp down the left edge (issue 22 class 1; the arXiv stamp is the
    same shape); a one-word binding-margin label and a tall block inside the page stay."""
    stamp = "Downloaded from repository.example.org at 6:51 on Monday November 11th 2019"
    page = _page(
        0,
        _block(Category.TEXT, "Main text of the page, long enough to be the body.", 200, 600),
        _block(Category.TEXT, stamp, 300, 900, 10, 40),  # 30 px wide, 600 tall, left 5 %
        _block(Category.TEXT, "NAME", 300, 500, 20, 45),  # a label: one word
        _block(Category.TEXT, "a narrow column of words here", 200, 900, 380, 420),  # not in a margin
        _block(Category.TEXT, "arXiv:2101.00001v1 [cs.CL] 1 Jan 2021", 200, 700, 770, 795),  # right edge
    )
    md = render_page(page).markdown
    assert "Downloaded" not in md and "arXiv" not in md
    assert "NAME" in md and "a narrow column of words here" in md
    assert "Downloaded" in render_page(page, keep_paratext=True).markdown


def test_a_wordmark_read_from_pixels_in_the_margin_of_a_layer_page_is_dropped() -> None:
    """A repository cover page: its text from the text layer, the university's wordmark at the top
    a picture the recognizer read. On a page read wholly by OCR nothing tells a logo apart, so
    the same block stays there; text read from a picture inside the page stays too."""

    def page(source: str) -> PageResult:
        body = _block(Category.TEXT, "Digital rights management in information publishing.", 200, 600)
        body.source = source
        logo = _block(Category.TEXT, "TILBURG UNIVERSITY", 10, 70, 300, 600)
        logo.source = "ocr"
        inside = _block(Category.TEXT, "by FutureSkill", 650, 700, 300, 600)
        inside.source = "ocr"
        return _page(0, logo, body, inside)

    layer = render_page(page("text-layer")).markdown
    assert "TILBURG" not in layer and "Digital rights" in layer and "by FutureSkill" in layer
    assert "TILBURG" in render_page(page("ocr")).markdown
