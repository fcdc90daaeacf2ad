"""A page with no ink skips layout and recognition (ocrstack.parsing.ink; issue 25 item 2: a
blank page cost a layout pass and two text detections)."""

from __future__ import annotations

from PIL import Image, ImageDraw

from ocrstack.parsing import ink
from ocrstack.parsing.engines import LayoutProvider, Recognizer
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.stages import Parser
from ocrstack.parsing.types import Block, Category, PageImage


class CountingLayout(LayoutProvider):
    name = "counting-layout"
    gives_order = False

    def __init__(self) -> None:
        self.calls = 0

    def detect(self, page: PageImage) -> list[Block]:
        self.calls += 1
        w, h = page.size
        return [Block((0, 0, w, h), Category.TEXT, 0.9, 0, "text")]


class CountingRecognizer(Recognizer):
    name = "counting-ocr"
    structured = False

    def __init__(self) -> None:
        self.oriented = 0
        self.read = 0

    def orient(self, page: PageImage) -> tuple[PageImage, int]:
        self.oriented += 1
        return page, 0

    def recognize(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        self.read += 1
        for b in blocks:
            b.text = "words"
        return blocks


def _page(image: Image.Image) -> PageImage:
    return PageImage(source="t.png", index=0, image=image, dpi=None, source_sha256="0" * 64)


def test_has_ink_is_false_only_without_a_pixel_darker_than_the_threshold() -> None:
    white = Image.new("RGB", (300, 400), "white")
    assert not ink.has_ink(white)
    assert not ink.has_ink(Image.new("L", (300, 400), ink.BLANK_MIN_GRAY))  # paper tint, no ink
    speck = white.copy()
    speck.putpixel((150, 200), (ink.BLANK_MIN_GRAY - 1,) * 3)
    assert ink.has_ink(speck)  # one pixel of the faintest ink sends the page the usual way
    drawn = white.copy()
    ImageDraw.Draw(drawn).text((10, 10), "a", fill=(120, 120, 120))
    assert ink.has_ink(drawn)


def test_transparent_pixels_count_as_paper() -> None:
    clear = Image.new("RGBA", (50, 50), (0, 0, 0, 0))  # black, but fully transparent
    assert not ink.has_ink(clear)
    clear.putpixel((5, 5), (0, 0, 0, 255))
    assert ink.has_ink(clear)


def test_a_blank_page_is_neither_laid_out_nor_read_and_says_so() -> None:
    layout, rec = CountingLayout(), CountingRecognizer()
    parser = Parser(ParseOptions(inputs=()), layout=layout, recognizer=rec)
    result = parser.parse_page(_page(Image.new("RGB", (300, 400), "white")))
    assert (layout.calls, rec.oriented, rec.read) == (0, 0, 0)
    assert result.blocks == [] and ink.BLANK_NOTE in result.notes


def test_a_page_with_ink_goes_through_every_stage() -> None:
    layout, rec = CountingLayout(), CountingRecognizer()
    parser = Parser(ParseOptions(inputs=()), layout=layout, recognizer=rec)
    image = Image.new("RGB", (300, 400), "white")
    ImageDraw.Draw(image).text((10, 10), "ink", fill="black")
    result = parser.parse_page(_page(image))
    assert (layout.calls, rec.oriented, rec.read) == (1, 1, 1)
    assert [b.text for b in result.blocks] == ["words"] and ink.BLANK_NOTE not in result.notes
