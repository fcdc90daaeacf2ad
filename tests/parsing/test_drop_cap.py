"""Issue 22 class 7: a drop cap (a first letter set over three lines) does not make its line's box
three lines high, so the lines beside it keep their order (:mod:`ocrstack.parsing.textlayer.lines`).

The characters are laid out as PDFium gives the olmOCR sample's "Over the past three decades":
the "O" (100 px high) in one run with the first line's letters (21 px), then the lines beside it."""

from __future__ import annotations

from ocrstack.parsing.lines.assign import assign_lines
from ocrstack.parsing.textlayer.extract import Char
from ocrstack.parsing.textlayer.lines import build_lines
from ocrstack.parsing.types import Block, Category

NL = Char("\n", (0, 0, 0, 0), generated=True)


def _run(text: str, x: float, y: float, h: float = 21, w: float = 11) -> list[Char]:
    out = []
    for k, ch in enumerate(text):
        if ch == " ":
            out.append(Char(" ", (0, 0, 0, 0), generated=True))
        else:
            out.append(Char(ch, (x + w * k, y, x + w * k + w - 1, y + h)))
    return out


def _page() -> list[Char]:
    chars = [Char("O", (460, 1620, 532, 1720))] + _run("ver the past three decades", 535, 1625) + [NL]
    chars += _run("pressure from non-governmental", 535, 1653) + [NL]
    chars += _run("sations (NGOs), governments", 535, 1681) + [NL]
    chars += _run("United Nations, has required", 460, 1709) + [NL]
    return chars + _run("porations (TNCs) to examine", 460, 1737)


def test_a_drop_cap_line_is_one_line_high() -> None:
    lines = build_lines(_page())
    first = lines[0]
    assert first.text == "Over the past three decades"
    assert first.bbox[0] == 460 and first.bbox[3] <= lines[1].bbox[1]  # from the cap, above the next


def test_the_lines_beside_a_drop_cap_read_in_order() -> None:
    block = Block((455, 1615, 980, 1760), Category.TEXT)
    (out,) = assign_lines([block], build_lines(_page()))
    assert [ln for ln in out.text.split("\n") if ln][:4] == [
        "Over the past three decades",
        "pressure from non-governmental",
        "sations (NGOs), governments",
        "United Nations, has required",
    ]
