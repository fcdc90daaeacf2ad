"""Issue 22 class 9: text only in the picture of a page read from its text layer (a cover with
its title in the layer and more words in the picture) is read by OCR and added to the figure
block; repeats of the layer and specks are not (:mod:`ocrstack.parsing.textlayer.pictures`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from ocrstack.parsing.engines import Recognizer
from ocrstack.parsing.textlayer.extract import PageText
from ocrstack.parsing.textlayer.pictures import read_pictures, repeats
from ocrstack.parsing.types import Block, Category, PageImage

SANS = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")


class _Fake(Recognizer):
    """Reads every block as ``text``; counts the blocks it was asked to read."""

    name = "fake"

    def __init__(self, text: str, structured: bool = False) -> None:
        self.text, self._structured, self.asked = text, structured, 0

    @property
    def structured(self) -> bool:
        return self._structured

    def recognize(self, page, blocks):
        for b in blocks:
            b.text = self.text
            self.asked += 1
        return blocks


def _page(image: Image.Image | None = None) -> PageImage:
    return PageImage("cover.pdf", 0, image or Image.new("RGB", (800, 1000), "white"), 200.0, "0" * 64)


def _figure(text: str = "THE POWER OF STORYTELLING\nFOR LEADERS") -> Block:
    return Block(bbox=(0, 0, 800, 1000), category=Category.FIGURE, text=text, source="text-layer")


PICTURE = PageText(size=(800, 1000), images=[((0.0, 0.0, 800.0, 1000.0), 0)])


def test_words_only_in_the_picture_are_added() -> None:
    fig = _figure()
    ocr = "THE P0WER OF STORYTELLNG\nFOR\nTHE VISION\nby FutureSkill\n2"  # a misread repeat, a speck
    assert read_pictures(_page(), [fig], PICTURE, _Fake(ocr)) == 2
    assert fig.text.splitlines() == [
        "THE POWER OF STORYTELLING",
        "FOR LEADERS",
        "THE VISION",
        "by FutureSkill",
    ]
    assert "2 line(s) read from the picture by OCR" in fig.warnings[0]


def test_no_picture_no_read() -> None:
    """A figure of vector drawings (no image object under it) keeps its layer text, unread."""
    fig, fake = _figure(), _Fake("THE VISION")
    assert read_pictures(_page(), [fig], PageText(size=(800, 1000)), fake) == 0
    assert fake.asked == 0 and "VISION" not in fig.text


def test_text_blocks_and_structured_recognizers_are_left_alone() -> None:
    text_block = Block(bbox=(0, 0, 800, 1000), category=Category.TEXT, text="body", source="text-layer")
    fake = _Fake("THE VISION")
    assert read_pictures(_page(), [text_block], PICTURE, fake) == 0 and fake.asked == 0
    served = _Fake("THE VISION", structured=True)  # a VLM: a request a picture, Markdown back
    assert read_pictures(_page(), [_figure()], PICTURE, served) == 0 and served.asked == 0


@pytest.mark.slow
def test_the_embedded_recognizer_reads_a_made_cover() -> None:
    """A made cover: a dark picture with words drawn in it; the layer (the block's text) holds
    only the title. The real rapidocr recognizer adds the picture's own words."""
    if not SANS.is_file():
        pytest.skip(f"{SANS} not found (Debian package fonts-dejavu-core)")
    from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer

    image = Image.new("RGB", (1200, 900), (30, 40, 90))
    draw = ImageDraw.Draw(image)
    draw.text((120, 150), "GREAT STORIES", font=ImageFont.truetype(str(SANS), 90), fill="white")
    draw.text((120, 600), "by FutureSkill", font=ImageFont.truetype(str(SANS), 60), fill=(250, 200, 60))
    fig = Block(bbox=(0, 0, 1200, 900), category=Category.FIGURE, text="GREAT STORIES", source="text-layer")
    pt = PageText(size=(1200, 900), images=[((0.0, 0.0, 1200.0, 900.0), 0)])
    assert read_pictures(_page(image), [fig], pt, RapidOcrRecognizer()) == 1
    assert fig.text.splitlines()[0] == "GREAT STORIES"
    assert "futureskill" in fig.text.splitlines()[1].casefold().replace(" ", "")


def test_repeats() -> None:
    layer = "THE POWER OF STORYTELLING\nFOR LEADERS"
    assert repeats("THE POWER OF", layer)  # inside a layer line
    assert repeats("STORYTELLING FOR LEADERS", layer)  # across two adjacent lines
    assert repeats("THE P0WER OF STORYTELLNG", layer)  # misread
    assert not repeats("THE VISION", layer)  # shares only "the"
    assert not repeats("by FutureSkill", layer)


def test_a_footer_the_figure_box_crosses_is_not_added_again() -> None:
    """The figure's box reaches over the page's footer (a layer line of another block); the crop's
    OCR reads the footer's middle again: it is a repeat of the page's layer, not picture text."""
    from ocrstack.parsing.textlayer.extract import Char

    footer_text = "Revision: 2.4  P/N 119-036  10 June 2019"
    chars = [Char(text=ch, bbox=(float(i), 990.0, i + 1.0, 999.0)) for i, ch in enumerate(footer_text)]
    pt = PageText(chars=chars, size=(800, 1000), images=[((0.0, 0.0, 800.0, 1000.0), 0)])
    footer = Block(bbox=(0, 990, 800, 999), category=Category.FOOTER, text=footer_text, source="text-layer")
    fig = _figure("Panel")
    fake = _Fake("ion: 2.4 P/N 119-036 10 June 20\nAutorange Probe Escape")
    assert read_pictures(_page(), [fig, footer], pt, fake) == 1
    assert fig.text.splitlines() == ["Panel", "Autorange Probe Escape"]
