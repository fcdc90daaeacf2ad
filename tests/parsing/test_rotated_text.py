"""Text boxes written at 90, 180 and 270 degrees (issue 11 item 4): each box is read in its own
frame and stays together (:mod:`ocrstack.parsing.lines.rotated`); the text layer gives
each character its direction (:func:`ocrstack.parsing.textlayer.extract.direction`)."""

from __future__ import annotations

import ctypes
import json
import math
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as raw
import pytest

from ocrstack.cli import main
from ocrstack.parsing.lines import rotated
from ocrstack.parsing.lines.assign import Line, join_lines
from ocrstack.parsing.textlayer.extract import direction, page_text
from ocrstack.parsing.textlayer.lines import build_lines


def _turned(deg: int, bbox, text: str) -> Line:
    return Line(bbox, text, 1.0, vertical=deg in (90, 270), flipped=deg in (180, 270))


#: The lines of odd_rotated_text_boxes at 200 DPI as the text layer gives them (boxes in page
#: px, stream order; the last test parses the page itself).
ROTATED_BOXES = [
    _turned(0, (597, 247, 903, 285), "(T) This is box text at top"),
    _turned(0, (597, 288, 882, 325), "written down from top"),
    _turned(180, (918, 933, 953, 970), "(B)"),
    _turned(180, (637, 870, 953, 907), "This is box text at bottom"),
    _turned(180, (655, 830, 816, 868), "from bottom"),
    _turned(180, (823, 830, 855, 868), "up"),
    _turned(180, (861, 830, 953, 868), "written"),
    _turned(270, (258, 442, 295, 752), "(L) This is box text on left"),
    _turned(270, (298, 509, 336, 752), "written vertically to"),
    _turned(270, (338, 631, 376, 752), "starboard"),
    _turned(90, (1230, 417, 1267, 751), "(R) This is box text on righy"),
    _turned(90, (1189, 417, 1227, 721), "written vertically to port"),
]


def test_direction_follows_the_ocr_paths_vertical_and_flipped_flags():
    lines = [_turned(d, (0, 0, 10, 10), "turned") for d in (0, 90, 180, 270)]
    assert [rotated.direction(ln) for ln in lines] == [0, 90, 180, 270]
    assert [rotated.turned(ln) for ln in lines] == [False, True, True, True]
    # one or two glyphs alone have no direction to follow, whatever their box or reading says
    assert not rotated.turned(_turned(180, (0, 0, 10, 20), "今"))
    assert not rotated.turned(_turned(90, (0, 0, 10, 40), "ab"))
    # a stacked fraction's box is taller than wide (math_zh_gaokao_exam: read "2-5")
    assert not rotated.turned(_turned(90, (0, 0, 20, 50), "12-35"))
    assert rotated.turned(_turned(90, (0, 0, 20, 120), "stamped"))
    alone = [_turned(0, (0, 0, 60, 20), "Script:"), _turned(180, (70, 0, 90, 20), "今")]
    assert rotated.runs(alone, 180) == []
    assert join_lines(alone, columns=False) == "Script: 今"
    # two fractions one above the other are no run: each stays on its answer row
    answers = [
        _turned(0, (0, 0, 60, 20), "C. 当λ="),
        _turned(90, (62, -10, 80, 30), "1-2"),
        _turned(0, (82, 0, 300, 20), "时，有且仅有一个点P"),
        _turned(0, (0, 40, 60, 60), "D. 当μ ="),
        _turned(90, (62, 30, 80, 70), "1-2"),
        _turned(0, (82, 40, 300, 60), "时，有且仅有一个点P"),
    ]
    assert rotated.runs(answers, 90) == []
    assert join_lines(answers, columns=False).split("\n") == [
        "C. 当λ= 1-2 时，有且仅有一个点P",
        "D. 当μ = 1-2 时，有且仅有一个点P",
    ]


@pytest.mark.parametrize(
    ("deg", "expected"),
    # a 10 x 40 box at (100, 200): in each frame the text runs along +u, its rows go down +v
    [(0, (100, 200, 110, 240)), (90, (200, -110, 240, -100)), (180, (-110, -240, -100, -200)),
     (270, (-240, 100, -200, 110))],
)  # fmt: skip
def test_frame_box_turns_the_box_back_upright(deg, expected):
    assert rotated.frame_box((100, 200, 110, 240), deg) == expected


def test_each_turned_box_is_read_in_its_own_frame_and_kept_together():
    text = join_lines(list(ROTATED_BOXES), columns=False)
    assert text.split("\n") == [
        "(T) This is box text at top",
        "written down from top",
        "(L) This is box text on left",
        "written vertically to",
        "starboard",
        "(R) This is box text on righy",
        "written vertically to port",
        "(B)",
        "This is box text at bottom",
        "written up from bottom",
    ]


def test_upright_lines_and_single_turned_lines_are_unchanged():
    upright = [_turned(0, (0, 0, 100, 20), "a b c"), _turned(0, (120, 0, 200, 20), "d e")]
    assert rotated.collapse(upright) == upright
    assert join_lines(upright, columns=False) == "a b c d e"
    # a turned line is a row of its own: it never joins an upright neighbour's row
    stamp = _turned(270, (210, 0, 230, 300), "arXiv:2401.00001v1 [cs.CL]")
    assert rotated.collapse([*upright, stamp]) == [*upright, stamp]
    assert join_lines([*upright, stamp], columns=False).split("\n") == ["a b c d e", stamp.text]


def test_runs_split_boxes_of_one_direction_that_do_not_touch():
    far = _turned(270, (900, 442, 937, 752), "another box far to the right")
    groups = rotated.runs([*ROTATED_BOXES, far], 270)
    assert groups == [[7, 8, 9], [12]]


@pytest.mark.parametrize(("angle", "rotation", "expected"), [
    (0.0, 0, 0), (math.pi / 2, 0, 90), (math.pi, 0, 180), (3 * math.pi / 2, 0, 270),
    (0.0, 90, 90), (3 * math.pi / 2, 90, 0), (math.radians(355), 0, 0), (math.radians(30), 0, 0),
    (-1.0, 0, 0),
])  # fmt: skip
def test_character_direction_is_pdfium_angle_plus_page_rotate(angle, rotation, expected):
    assert direction(angle, rotation) == expected


def _pdf(path: Path, turns: list[int], rotate: int = 0) -> Path:
    """One page with the word ``Rotated`` drawn turned ``t`` degrees counter-clockwise in PDF
    user space (y up) for each ``t`` of ``turns``, each at its own place; /Rotate ``rotate``."""
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(612, 792)
    for n, t in enumerate(turns):
        obj = raw.FPDFPageObj_NewTextObj(pdf.raw, b"Helvetica", 14.0)
        text = "Rotated"
        buf = (ctypes.c_ushort * (len(text) + 1))(*[ord(c) for c in text], 0)
        raw.FPDFText_SetText(obj, buf)
        c, s = round(math.cos(math.radians(t))), round(math.sin(math.radians(t)))
        raw.FPDFPageObj_Transform(obj, c, s, -s, c, 200 + 150 * (n % 2), 300 + 200 * (n // 2))
        raw.FPDFPage_InsertObject(page.raw, obj)
    raw.FPDFPage_GenerateContent(page.raw)
    page.set_rotation(rotate)
    page.close()
    pdf.save(path)
    pdf.close()
    return path


@pytest.mark.parametrize("rotate", [0, 90, 180, 270])
def test_each_characters_direction_is_the_way_its_boxes_advance_on_the_rendered_page(tmp_path, rotate):
    # the expected direction is measured from the boxes, not taken from PDFium's angle: text
    # turned t degrees counter-clockwise in user space advances t degrees counter-clockwise on
    # the page, i.e. (360 - t) clockwise, plus /Rotate, clockwise
    pdf = _pdf(tmp_path / "turned.pdf", [0, 90, 180, 270], rotate)
    w, h = (792, 612) if rotate in (90, 270) else (612, 792)
    chars = [c for c in page_text(pdf, 0, (w * 2, h * 2)).chars if c.text.strip()]
    assert len(chars) == 28
    advances = []
    for k in range(4):  # PDFium's text page keeps each word whole, not always in drawing order
        word = chars[7 * k : 7 * k + 7]
        (x0, y0), (x1, y1) = (((c.bbox[0] + c.bbox[2]) / 2, (c.bbox[1] + c.bbox[3]) / 2) for c in word[::6])
        advance = round(math.degrees(math.atan2(y1 - y0, x1 - x0))) % 360  # y down: clockwise degrees
        assert {c.direction for c in word} == {advance}
        (line,) = build_lines(word)
        assert line.text == "Rotated" and rotated.direction(line) == advance
        advances.append(advance)
    assert sorted(advances) == sorted((360 - 90 * k + rotate) % 360 for k in range(4))


def test_a_glyph_turned_inside_an_upright_line_keeps_the_line_upright():
    # the XeTeX logo's mirrored E is a glyph turned 180 degrees (en_twocol_ltnews24)
    from ocrstack.parsing.textlayer.extract import Char

    logo = enumerate("XETEX")
    chars = [Char(ch, (10.0 * k, 0, 10.0 * k + 10, 20), direction=180 if ch == "E" else 0) for k, ch in logo]
    (line,) = build_lines(chars)
    assert line.text == "XETEX" and rotated.direction(line) == 0


@pytest.mark.corpus
def test_odd_rotated_text_boxes_reads_each_box_as_a_reader_turning_the_page(corpus, tmp_path):
    # the phrases are what the rendered page shows each box to say when turned upright (the text
    # layer's stream order has the upside-down box's words in another order: "from bottom up written")
    rc = main(["parse", str(corpus / "odd_rotated_text_boxes.pdf"), "-o", str(tmp_path), "--no-progress"])
    assert rc == 0
    md = (tmp_path / "odd_rotated_text_boxes.md").read_text(encoding="utf-8")
    for box in (
        "(T) This is box text at top\nwritten down from top",
        "(L) This is box text on left\nwritten vertically to\nstarboard",
        "(R) This is box text on righy\nwritten vertically to port",
        "(B)\nThis is box text at bottom\nwritten up from bottom",
    ):
        assert box in md, box
    doc = json.loads((tmp_path / "odd_rotated_text_boxes.blocks.json").read_text(encoding="utf-8"))
    assert doc["pages"][0]["text_layer"]["sound"] is True
