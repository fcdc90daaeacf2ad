"""Column-aware reading order (ocrstack.parsing.reading_order) on synthetic layouts with a known order."""

from __future__ import annotations

import pytest

from ocrstack.parsing.reading_order import order_blocks, order_lines, rows, xy_cut
from ocrstack.parsing.types import Block, Category


def _column(x0: float, x1: float, y0: float, n: int, h: float = 30, gap: float = 5) -> list[tuple]:
    return [(x0, y0 + k * (h + gap), x1, y0 + k * (h + gap) + h) for k in range(n)]


def test_two_columns_with_aligned_baselines_read_left_column_first():
    # LaTeX two-column pages align baselines across columns: every row has a line in each
    # column, which is exactly where a y-sorted order (rapidocr's) interleaves them.
    left = _column(100, 780, 500, 10)
    right = _column(850, 1530, 500, 10)
    boxes = [b for pair in zip(left, right, strict=True) for b in pair]  # y-sorted, interleaved
    order = xy_cut(boxes, min_gap_x=30)
    assert [boxes[i] for i in order] == left + right


def test_full_width_title_then_two_columns_then_full_width_footer():
    # the columns run down most of the page (a real gutter: 24 of 26 rows of the page)
    title = (100, 100, 1530, 160)
    left = _column(100, 780, 200, 24)
    right = _column(850, 1530, 200, 20)  # right column shorter
    footer = (100, 1060, 1530, 1100)
    boxes = [footer, *right, title, *left]
    order = xy_cut(boxes, min_gap_x=30)
    assert [boxes[i] for i in order] == [title, *left, *right, footer]


def test_left_column_longer_than_right_is_still_read_column_by_column():
    # the strip below the right column's end holds only left-column lines; it belongs to
    # the left column, before the right column
    left = _column(100, 780, 200, 12)
    right = _column(850, 1530, 200, 3)
    boxes = sorted(left + right, key=lambda b: (b[1], b[0]))
    order = xy_cut(boxes, min_gap_x=30)
    assert [boxes[i] for i in order] == left + right


def test_three_columns():
    cols = [_column(x, x + 400, 100, 8) for x in (50, 520, 990)]
    boxes = sorted([b for c in cols for b in c], key=lambda b: (b[1], b[0]))
    order = xy_cut(boxes, min_gap_x=30)
    assert [boxes[i] for i in order] == cols[0] + cols[1] + cols[2]


def test_word_gap_narrower_than_a_line_height_is_not_a_gutter():
    # two boxes on one row 10 px apart (a wide word space) followed by a full line
    boxes = [(100, 100, 400, 130), (410, 100, 700, 130), (100, 140, 700, 170)]
    assert order_lines(boxes) == [0, 1, 2]


def test_rows_groups_by_vertical_overlap_and_sorts_left_to_right():
    boxes = [(300, 102, 400, 128), (100, 100, 200, 130), (100, 150, 200, 180)]
    assert rows(boxes) == [[1, 0], [2]]
    assert order_lines(boxes, columns=False) == [1, 0, 2]


def _block(bbox, order=0, label="text", cat=Category.TEXT):
    return Block(bbox=bbox, category=cat, order=order, label=label)


def test_order_blocks_without_provider_order_uses_columns_and_renumbers():
    a, b, c = _block((850, 100, 1500, 500)), _block((100, 100, 780, 500)), _block((100, 50, 1500, 90))
    out = order_blocks([a, b, c], provider_order=False)
    assert out == [c, b, a]
    assert [x.order for x in out] == [0, 1, 2]


def test_provider_order_is_kept_and_recovered_blocks_are_inserted_by_position():
    # the provider says right column first (e.g. a right-to-left reading order); keep it
    right = _block((850, 100, 1500, 500), order=0)
    left = _block((100, 100, 780, 500), order=1)
    extra = _block((860, 520, 1490, 560), label="recovered")  # below the right block
    out = order_blocks([left, right, extra], provider_order=True)
    assert out == [right, extra, left]


def test_table_lines_read_row_by_row():
    from ocrstack.parsing.reading_order import order_table_lines

    # 16 rows x 2 cells, like the Chinese Debian reference table
    boxes = [
        b
        for k in range(16)
        for b in ((100, 100 + 40 * k, 300, 130 + 40 * k), (500, 100 + 40 * k, 900, 130 + 40 * k))
    ]
    assert order_table_lines(boxes, min_gap_x=60) == list(range(32))


def test_table_block_that_is_three_long_text_columns_is_read_column_by_column():
    from ocrstack.parsing.reading_order import order_table_lines

    # rapid-layout calls the whole three-column pari refcard one table (~100 lines per column)
    cols = [_column(x, x + 680, 70, 45, h=27, gap=5) for x in (40, 810, 1580)]
    boxes = sorted([b for c in cols for b in c], key=lambda b: (b[1], b[0]))
    order = order_table_lines(boxes, min_gap_x=54)
    assert [boxes[i] for i in order] == cols[0] + cols[1] + cols[2]


def test_exam_choices_side_by_side_are_read_row_by_row_on_a_single_column_page():
    """Block boxes of math_zh_gaokao_exam page 1 (200 DPI, rapid-layout + recovered lines):
    full-width questions with their choices A-D side by side below each. The choices share
    gutters over a few rows only (under half the page height): no columns; they are read row
    by row, each question before its choices."""
    boxes = [
        (199, 871, 1455, 950),  # 0 section intro, full width
        (210, 973, 1030, 1020),  # 1 question 1
        (251, 1024, 352, 1067),  # 2 A
        (554, 1021, 687, 1068),  # 3 B
        (865, 1024, 993, 1066),  # 4 C
        (1170, 1023, 1325, 1066),  # 5 D
        (209, 1087, 688, 1125),  # 6 question 2
        (251, 1141, 400, 1178),  # 7 A
        (554, 1141, 690, 1178),  # 8 B
        (866, 1141, 995, 1178),  # 9 C
        (1172, 1142, 1299, 1175),  # 10 D
        (208, 1206, 1288, 1297),  # 11 question 3, full width
        (211, 1951, 1460, 2132),  # 12 question 8 at the bottom of the page
    ]
    assert xy_cut(boxes) == list(range(len(boxes)))


def test_figure_text_is_read_row_by_row():
    """tables_zh_debian_reference page 1: "Table 1.24" (device, descriptor, meaning) is
    labelled figure by rapid-layout; its lines are read row by row, not column by column."""
    from ocrstack.parsing.recognition.rapidocr.recognizer import Line, assign_lines

    fig = Block((147, 1352, 1588, 1513), Category.FIGURE)
    cells = [["设备", "说明", "文件描述符"], ["stdin", "标准输入", "0"], ["stdout", "标准输出", "1"]]
    lines = [
        Line((200 + 500 * c, 1360 + 50 * r, 300 + 500 * c, 1390 + 50 * r), text, 0.99)
        for r, row in enumerate(cells)
        for c, text in enumerate(row)
    ]
    assign_lines([fig], lines)
    assert fig.text.split("\n") == [" ".join(row) for row in cells]


def test_short_side_by_side_lines_are_rows_unless_wide_blocks():
    """A gutter through under half of the page's height: side-by-side lines (order_lines: no
    width rule) are table rows, read left to right; side-by-side wide blocks (block order,
    odd_rotate90_skewed_scan's two-column middle, 31 % of the page) are columns."""
    title = (100, 100, 1530, 160)
    left = _column(100, 780, 200, 4)
    right = _column(850, 1530, 200, 4)
    body = _column(100, 1530, 400, 20)
    boxes = [title, *left, *right, *body]
    rows_first = [title, *[b for p in zip(left, right, strict=True) for b in p], *body]
    assert [boxes[i] for i in xy_cut(boxes, min_gap_x=30, min_column_width=None)] == rows_first
    assert [boxes[i] for i in xy_cut(boxes, min_gap_x=30)] == [title, *left, *right, *body]


def test_heading_right_above_a_full_width_block_is_not_the_end_of_the_left_column():
    """odd_rotate90_skewed_scan (deskewed, block boxes): the two-column middle, then the
    "Additional Features" heading over a full-width list."""
    boxes = [
        (420, 115, 1363, 245),  # 0 title
        (273, 895, 548, 926),  # 1 "Recording a Sequence"
        (269, 924, 877, 1349),  # 2 left text
        (269, 1361, 373, 1404),  # 3 "Editing"
        (273, 1397, 867, 1534),  # 4 left text
        (902, 889, 1491, 1106),  # 5 right text
        (904, 1127, 1525, 1344),  # 6 right text
        (905, 1365, 1347, 1398),  # 7 "Composition Without Compromise"
        (902, 1399, 1501, 1534),  # 8 right text
        (275, 1562, 521, 1592),  # 9 "Additional Features"
        (272, 1593, 1500, 2000),  # 10 full-width list
        (1077, 2102, 1509, 2188),  # 11 address
    ]
    assert xy_cut(boxes) == list(range(len(boxes)))


# -- issue 11 item 4: where the XY-cut lost to a plain whole-page read ---------------------------


def test_aligned_equation_array_is_read_row_by_row():
    """An aligned array inside one block (math_crc_paper, mathtools): left-hand sides, "= ..."
    right-hand sides, "by (3.24)" notes and equation numbers, each column separated by a
    gutter over one line height. Column by column it read all numbers first; each row belongs
    together (the lhs, lhs and note columns are 3-9 line heights wide, every line on a row)."""
    rows_ = [
        [(400, 100 + 45 * k, 560, 130 + 45 * k), (600, 100 + 45 * k, 1000, 130 + 45 * k)] for k in range(4)
    ]
    rows_[1].append((1060, 145, 1260, 175))  # "by (3.24)"
    rows_[2].append((1060, 190, 1230, 220))  # "by (3.25)"
    rows_[0].append((1400, 100, 1470, 130))  # "(3.26)"
    rows_[3].append((1400, 235, 1470, 265))  # "(3.27)"
    flat = [b for r in rows_ for b in r]
    scrambled = sorted(flat, key=lambda b: (-b[0], b[1]))  # numbers, notes, rhs, lhs
    assert [scrambled[i] for i in order_lines(scrambled)] == flat


def test_equation_number_beside_a_paragraph_line_follows_its_line():
    """A single narrow item on one line's row (an equation number, texinfo's "[Function]" tag on
    libtasn1.pdf's function headers) is read after that line, not after the whole block."""
    text = _column(100, 1300, 100, 5)
    number = (1400, 100, 1470, 130)
    boxes = [*text, number]
    assert [boxes[i] for i in order_lines(boxes)] == [text[0], number, *text[1:]]


def test_option_names_beside_descriptions_are_rows():
    """libtasn1.pdf page 8: "-c, --check  checks the syntax only" ... under a usage paragraph."""
    usage = _column(100, 1400, 100, 3)
    names = _column(120, 420, 220, 5)
    descr = [(520, b[1], 520 + 200 + 60 * k, b[3]) for k, b in enumerate(names)]
    boxes = [*usage, *names, *descr]
    want = [*usage, *[b for p in zip(names, descr, strict=True) for b in p]]
    assert [boxes[i] for i in order_lines(boxes)] == want


def test_text_columns_with_aligned_baselines_stay_columns_in_line_order():
    """Two text columns read as one block (``--layout none``): lines 23 line heights wide, every
    baseline shared (LaTeX), still read column by column (en_twocol_ltnews24)."""
    left = _column(100, 790, 100, 30)
    right = _column(840, 1530, 100, 30)
    boxes = [b for p in zip(left, right, strict=True) for b in p]
    assert [boxes[i] for i in order_lines(boxes)] == left + right


def test_list_block_reaching_into_the_paragraph_below_is_read_first():
    """libtasn1.pdf page 6 (rapid-layout boxes): the box of a bullet list reaches 96 px into the
    paragraph below, which starts 8 px further left. Both overlap on a "row"; read left edge
    first the paragraph came before the list."""
    title = _block((249, 200, 700, 240))
    items = _block((258, 268, 1464, 798))
    para = _block((250, 702, 1449, 815))
    after = _block((249, 865, 484, 901))
    out = order_blocks([para, after, items, title], provider_order=False)
    assert out == [title, items, para, after]


def test_nested_boxes_with_the_same_middle_keep_left_to_right_order():
    """libtasn1.pdf page 10: option names boxed inside the box of the whole option table."""
    table = (281, 559, 1371, 733)
    names = (276, 560, 599, 733)
    assert rows([table, names], stacked=True) == [[1, 0]]


def test_margin_note_is_read_beside_its_paragraph_not_first():
    """math_mathtools_doc page 1 (block boxes): "Suggested by Henri Menke 2019/07/08" in the left
    margin, beside the paragraph below the syntax box. A narrow, mostly empty margin is no
    column: the note is read before the paragraph whose top is below its middle."""
    text = [
        _block((394, 352, 1390, 412)),
        _block((401, 460, 1389, 526)),
        _block((398, 548, 1390, 613)),
        _block((391, 919, 1048, 964)),
        _block((392, 1333, 752, 1372)),
        _block((392, 1474, 1392, 1710)),
        _block((396, 1949, 1392, 2013)),
    ]
    note1 = _block((102, 486, 254, 584), label="recovered")
    note2 = _block((100, 1412, 314, 1511))
    out = order_blocks([note2, note1, *text], provider_order=False)
    assert out == [*text[:2], note1, *text[2:5], note2, *text[5:]]


def test_vertical_labels_in_a_binding_margin_come_after_the_page_text():
    """An exam's binding margin: the name and seat-number fields written top to bottom in tall,
    narrow boxes left of the text. They are no column read first; they follow the page."""
    text = [_block((300, 200 + 300 * k, 1500, 450 + 300 * k)) for k in range(6)]
    labels = [_block((60, 300, 100, 700)), _block((60, 900, 100, 1300))]
    out = order_blocks([*labels, *text], provider_order=False)
    assert out == [*text, *labels]


def test_a_narrow_but_full_column_is_not_a_margin():
    """A real column (a sidebar 0.3 of the width, filled top to bottom) is still read first."""
    side = [_block((100, 200 + 210 * k, 500, 400 + 210 * k)) for k in range(8)]
    main = [_block((560, 200 + 420 * k, 1500, 600 + 420 * k)) for k in range(4)]
    out = order_blocks([*main, *side], provider_order=False)
    assert out == [*side, *main]


@pytest.mark.slow
def test_a_binding_margin_of_stacked_letters_reads_as_words_after_the_page(tmp_path):
    """Issue 11 item 4 end to end on the embedded OCR path: a page of text with three labels of
    upright letters stacked down its left margin (the detector finds each letter alone). The
    labels come after the page text, each as one word."""
    pytest.importorskip("rapidocr")
    from PIL import Image, ImageDraw, ImageFont

    from ocrstack.parsing.options import ParseOptions
    from ocrstack.parsing.run import pipeline

    font = ImageFont.load_default(size=30)
    img = Image.new("RGB", (1700, 2200), "white")
    draw = ImageDraw.Draw(img)
    words = "the quick brown fox jumps over the lazy dog and reads a page of text".split()
    for k in range(30):
        line = " ".join(words[(k + j) % len(words)] for j in range(9))
        draw.text((300, 200 + 60 * k), line, fill="black", font=font)
    y = 500
    for label in ("NAME", "CLASS", "SEAT"):
        for ch in label:
            draw.text((90, y), ch, fill="black", font=font)
            y += 42
        y += 160
    img.save(tmp_path / "exam.png", dpi=(200, 200))
    opts = ParseOptions(inputs=(tmp_path / "exam.png",), output=tmp_path / "out")
    pipeline.run(opts, progress=False, echo=lambda s: None)
    md = (tmp_path / "out" / "exam.md").read_text(encoding="utf-8")
    tail = md.split()[-3:]
    assert tail == ["NAME", "CLASS", "SEAT"], md[-300:]
    assert md.index("quick") < md.index("NAME")
