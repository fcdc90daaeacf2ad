"""Text layer (issue 11 item 1): PDFium characters and their boxes, the soundness verdict on
the real corpus, lines, and the routing of layout blocks between the layer and recognition.

Truth: NAME.txt beside each born-digital corpus PDF is pypdfium2's ``get_text_range`` of the
page (corpus README), a different PDFium call than the per-character reads under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pikepdf
import pytest
from PIL import Image

from ocrstack.bench.metrics import sequence_similarity, word_recall
from ocrstack.parsing import documents
from ocrstack.parsing.textlayer.extract import Char, PageText, page_text
from ocrstack.parsing.textlayer.lines import build_lines
from ocrstack.parsing.textlayer.soundness import Verdict, judge, sample_agreement, tally
from ocrstack.parsing.textlayer.stage import SOURCE_LAYER, fill_blocks, read_page
from ocrstack.parsing.types import Block, Category, PageImage


def _born_digital(corpus: Path) -> list[tuple[str, int]]:
    manifest = json.loads((corpus / "manifest.json").read_text())
    return [
        (Path(e["file"]).stem, i)
        for e in manifest
        if e.get("born") and e.get("text_layer") and e["split"] == "dev" and not e.get("encrypted")
        for i in range(e["pages"])
    ]


def _page(pdf: Path, index: int, dpi: int = 100) -> PageImage:
    (page,) = documents.iter_pages(pdf, pages=str(index + 1), dpi=dpi)
    return page


def test_characters_read_one_by_one_give_the_text_layer_of_every_dev_page(corpus):
    pages = _born_digital(corpus)
    assert len(pages) >= 15
    for stem, i in pages:
        truth = (corpus / f"{stem}.txt").read_text(encoding="utf-8").split("\f")[i]
        pdf = corpus / f"{stem}.pdf"
        pt = page_text(pdf, i, _page(pdf, i, 50).size)
        # every character equal; PDFium's generated line breaks may differ by one (pari refcard)
        assert "".join(pt.text().split()) == "".join(truth.split()), stem


def _ink_inside(image: Image.Image, chars: list[Char]) -> float:
    """Share of the characters whose box holds a dark pixel of the rendered page."""
    gray = np.asarray(image.convert("L"))
    hits = 0
    for c in chars:
        x0, y0, x1, y1 = (round(v) for v in c.bbox)
        hits += bool((gray[max(0, y0) : y1 + 1, max(0, x0) : x1 + 1] < 128).any())
    return hits / len(chars)


@pytest.mark.parametrize("rotate", [0, 90, 270])
def test_boxes_are_page_pixels_of_the_rendered_page_rotate_included(corpus, tmp_path, rotate):
    src = corpus / "en_single_libtasn1_intro.pdf"
    pdf = tmp_path / f"r{rotate}.pdf"
    with pikepdf.open(src) as doc:
        doc.pages[0].Rotate = rotate
        doc.save(pdf)
    page = _page(pdf, 0, 100)
    pt = page_text(pdf, 0, page.size)
    letters = [c for c in pt.chars if c.text.isalnum() and not c.generated]
    assert len(letters) > 700
    assert _ink_inside(page.image, letters) > 0.98
    # the same characters one character width away hold no ink far more often
    moved = [Char(c.text, (c.bbox[0] + 2000, c.bbox[1], c.bbox[2] + 2000, c.bbox[3])) for c in letters[:50]]
    assert _ink_inside(page.image, moved) == 0.0
    if rotate:
        assert pt.rotation == rotate and page.size[0] > page.size[1]


def test_boxes_scale_with_the_render_dpi(corpus):
    pdf = corpus / "en_single_bzip2_manual.pdf"
    small, large = page_text(pdf, 0, _page(pdf, 0, 50).size), page_text(pdf, 0, _page(pdf, 0, 200).size)
    a = next(c for c in small.chars if c.text == "b" and not c.generated)
    b = next(c for c in large.chars if c.text == "b" and not c.generated)
    assert b.bbox == pytest.approx(tuple(4 * v for v in a.bbox), abs=2.5)


def test_dev_pages_are_sound_and_scans_have_no_layer(corpus):
    for stem, i in _born_digital(corpus):
        pdf = corpus / f"{stem}.pdf"
        _, verdict = read_page(_page(pdf, i, 50), "auto")
        assert verdict.sound, (stem, i, verdict.reasons)
    for scan in ("scan_gutenberg_huckfinn_p29.pdf", "scan_linn_brochure_twocol.pdf"):
        _, verdict = read_page(_page(corpus / scan, 0, 50), "auto")
        assert not verdict.sound and verdict.reasons[0].startswith("no text layer")


def test_an_invisible_ocr_layer_over_a_scan_is_read_again_unless_on(corpus):
    # page 4 of odd_mixed_sizes_multipage is a page image with an invisible text layer (manifest)
    page = _page(corpus / "odd_mixed_sizes_multipage.pdf", 3, 50)
    _, auto = read_page(page, "auto")
    assert not auto.sound and "invisible text layer over a scanned image" in auto.reasons[0]
    _, on = read_page(page, "on")
    assert on.sound


def test_a_raster_input_has_no_layer(corpus):
    (page,) = documents.iter_pages(corpus / "odd_png_alpha_opaque_map.png")
    pt, verdict = read_page(page, "auto")
    assert pt is None and verdict.reasons == ["raster input: no text layer"]


# -- pure units --------------------------------------------------------------------------------


def _chars(text: str, x: float = 0, y: float = 0, w: float = 10, h: float = 20, **kw) -> list[Char]:
    return [Char(ch, (x + k * w, y, x + (k + 1) * w, y + h), **kw) for k, ch in enumerate(text)]


def test_lines_split_at_line_breaks_and_wide_gaps_and_keep_hyphens():
    chars = _chars("Hello") + [Char(" ", (0, 0, 0, 0), generated=True)] + _chars("world", x=60)
    chars += [Char("\ufffe", (110, 0, 120, 20), hyphen=True), Char("\r", (0, 0, 0, 0), generated=True)]
    chars += [Char("\n", (0, 0, 0, 0), generated=True)] + _chars("next", y=30)
    chars += _chars("far", x=200, y=30)  # 160 px = 8 heights after "next": another column
    lines = build_lines(chars)
    assert [ln.text for ln in lines] == ["Hello world-", "next", "far"]
    assert lines[0].bbox == (0, 0, 120, 20)


def test_unusable_characters_are_left_out_of_lines():
    chars = _chars("abc")
    lines = build_lines(chars, usable=lambda c: c.text != "b")
    assert [ln.text for ln in lines] == ["ac"]


def test_judge_counts_private_use_cid_and_hidden_characters():
    page = PageText(chars=_chars("\ue001" * 30 + "ok" * 5), size=(1000, 100))
    v = judge(page)
    assert not v.sound and "private-use" in v.reasons[0]
    cid = PageText(chars=_chars("(cid:12)(cid:13)text") + _chars("plain text here", y=30), size=(1000, 100))
    assert tally(cid)["cid"] == 2 and not judge(cid).sound
    outside = PageText(chars=_chars("x" * 20, y=500), size=(1000, 100))
    v = judge(outside)
    assert not v.sound and "outside" in v.reasons[0]


def test_sample_agreement_takes_the_median_of_spread_lines():
    lines = [((0, 10 * k, 100, 10 * k + 9), f"line number {k}") for k in range(9)]
    seen = []
    ocr = {0: "line number 0", 30: "garbage garbage", 60: "line number 6"}

    def read(boxes):
        seen.extend(boxes)
        return [ocr[b[1]] for b in boxes]

    agreement, n, agreed = sample_agreement(lines, read)
    assert n == 3 and [b[1] for b in seen] == [0, 30, 60]  # the first two split: the third decides
    assert 0.9 < agreement <= 1.0  # two of three agree: the median line agrees
    assert agreed == [0, 6]  # the lines (indices into ``lines``) that agreed on their own
    assert sample_agreement([((0, 0, 1, 1), "short")], read) is None
    seen.clear()
    ocr[30] = "line number 3"
    agreement, n, agreed = sample_agreement(lines, read)
    assert n == 2 and len(seen) == 2 and agreed == [0, 3]  # two of three agree already: one read less
    seen.clear()
    ocr.update({0: "garbage", 30: "rubbish"})
    agreement, n, agreed = sample_agreement(lines, read)
    assert n == 2 and agreed == [] and agreement < 0.6  # two of three disagree: not sound either way


def test_the_ocr_sample_reads_only_runs_of_fonts_not_checked_yet():
    from ocrstack.parsing.textlayer.stage import CheckedFonts, check_sample

    body = _chars("body text in roman", y=0, font="F1+Roman") + [Char("\n", (0, 0, 0, 0), generated=True)]
    code = _chars("monospace words", y=40, font="F2+Mono")
    pt = PageText(chars=body + code, size=(400, 100))
    image = Image.new("RGB", pt.size, "white")
    read_widths = []

    def read(crops):
        read_widths.extend(c.size[0] for c in crops)
        return ["monospace words"] * len(crops)

    sound = Verdict(True)
    v, agreed = check_sample(pt, sound, read, image, checked=frozenset({"F1+Roman"}))
    assert len(read_widths) == 1 and v.agreement == 1.0 and agreed == {"F2+Mono"}
    memo = CheckedFonts()
    key = ("doc.pdf", 1, 2)
    memo.add(key, agreed | {"F1+Roman"})
    v, agreed = check_sample(pt, sound, read, image, checked=memo.get(key))
    assert len(read_widths) == 1 and v.sound and v.agreement is None and v.sample_note and agreed == set()
    assert memo.get(("other.pdf", 1, 2)) == frozenset()


def test_blocks_take_layer_text_pictures_and_outlined_text_go_to_the_recognizer():
    pt = PageText(
        chars=_chars("Title", y=0) + _chars("body text", y=100) + _chars("stray line", y=300),
        size=(1000, 1000),
        images=[((0, 500, 400, 900), 5)],
    )
    blocks = [
        Block((0, 0, 200, 25), Category.TITLE),
        Block((0, 95, 300, 125), Category.TEXT),
        Block((0, 500, 400, 900), Category.FIGURE),  # a raster picture, no layer text
        Block((600, 600, 900, 700), Category.TEXT),  # text drawn as outlines: no characters
    ]
    page = PageImage("x.pdf", 0, Image.new("RGB", (1000, 1000), "white"), 72.0, "0")
    filled, rest = fill_blocks(page, blocks, pt, Verdict(True))
    assert [b.text for b in filled[:2]] == ["Title", "body text"]
    assert all(b.source == SOURCE_LAYER for b in filled)
    assert filled[2].label == "recovered" and filled[2].text == "stray line"  # no block held it
    assert [b.category for b in rest] == [Category.FIGURE, Category.TEXT]
    assert "picture without text-layer characters" in rest[0].warnings[-1]
    assert "no text-layer characters" in rest[1].warnings[-1]


def test_formulas_of_math_pages_go_to_a_structured_recognizer_only():
    formula = _chars("x\x01y=z", y=0)
    pt = PageText(chars=formula + _chars("words", y=100), size=(1000, 1000))
    verdict = judge(pt)
    page = PageImage("x.pdf", 0, Image.new("RGB", (1000, 1000), "white"), 72.0, "0")
    for structured, routed in ((True, 1), (False, 0)):
        blocks = [Block((0, 0, 200, 25), Category.FORMULA), Block((0, 95, 300, 125), Category.TEXT)]
        filled, rest = fill_blocks(page, blocks, pt, verdict, structured=structured)
        assert len(rest) == routed
        if not structured:
            assert filled[0].text == "xy=z" and "1 unfaithful" in filled[0].warnings[-1]


def test_blocks_with_unfaithful_glyphs_are_read_at_the_glyphs_line_boxes_without_detection():
    from ocrstack.parsing.engines import Recognizer
    from ocrstack.parsing.textlayer.stage import recognize_rest

    broken = [Char("", c.bbox, map_error=True) for c in _chars("unmapped", x=100, y=100)]
    broken += _chars("second", x=100, y=130)
    pt = PageText(chars=broken, size=(1000, 1000))
    page = PageImage("x.pdf", 0, Image.new("RGB", (1000, 1000), "white"), 72.0, "0")

    class Lines(Recognizer):
        name, structured = "lines", False
        crops: list = []
        cropped: list = []

        def recognize(self, page, blocks):
            raise AssertionError("not used")

        def recognize_only(self, page, blocks):
            self.cropped.extend(blocks)
            for b in blocks:
                b.text = "detected"
            return blocks

        def read_line_crops(self, crops):
            self.crops.extend(crops)
            return [f"line {k}" for k in range(len(crops))]

    rec = Lines()
    glyphs, picture = Block((50, 90, 400, 160), Category.TEXT), Block((600, 600, 900, 700), Category.FIGURE)
    out = recognize_rest(page, [glyphs, picture], rec, pt)
    assert out == [glyphs, picture] and all(b.source == "ocr" for b in out)
    assert glyphs.text == "line 0\nline 1" and len(rec.crops) == 2  # two glyph lines, no detector
    # the crop covers the line with a margin of about a third of its height on each side
    assert rec.crops[0].size[0] > 80 + 2 * 0.3 * 20 and rec.crops[0].size[1] == 20 + 8
    assert rec.cropped == [picture] and picture.text == "detected"  # no glyphs: the detector path
    structured = Lines()
    structured.structured, structured.crops, structured.cropped = True, [], []
    recognize_rest(page, [Block((50, 90, 400, 160), Category.TEXT)], structured, pt)
    assert structured.crops == [] and len(structured.cropped) == 1  # a server reads its own crop


#: Accents the pages draw as glyphs of their own over a letter: the truth files (pdftotext) keep
#: them apart, the layer lines compose them with the letter (issue 22 class 3), as the page shows.
COMPOSED = {
    "en_twocol_ltnews24": [("u\u02db", "\u0173")],  # u + spacing ogonek -> u with ogonek
    "math_crc_paper": [("q\u02c6", "q\u0302")],  # q + spacing circumflex -> q + combining circumflex
    "math_zh_gaokao_exam": [("( \u0304\U0001d467", "(\U0001d467\u0304")],  # macron over the second z
}


@pytest.mark.corpus
def test_layer_lines_hold_every_word_of_the_dev_pages_in_stream_order(corpus):
    for stem, i in _born_digital(corpus):
        truth = (corpus / f"{stem}.txt").read_text(encoding="utf-8").split("\f")[i]
        for drawn, composed in COMPOSED.get(stem, []):
            truth = truth.replace(drawn, composed)
        pdf = corpus / f"{stem}.pdf"
        text = "\n".join(ln.text for ln in build_lines(page_text(pdf, i, _page(pdf, i, 50).size).chars))
        assert word_recall(truth, text) == 1.0, stem
        assert sequence_similarity(truth, text) == 1.0, stem


def test_page_numbers_beside_page_numbers_join_once():
    """Layer lines split at wide gaps, so a contents row can hold two number lines; handling the
    right one first must not make the left one's join fail (ValueError). Numbers beside numbers
    are a table's cells, not contents page numbers (issue 22 class 5), so none is joined."""
    from ocrstack.parsing.lines.assign import Line, merge_toc_numbers

    rows = [("Intro", "3", "4"), ("Usage", "6", "5")]
    lines = []
    for y, (title, a, b) in enumerate(rows):
        top = 40 * y
        lines += [
            Line((0, top, 100, top + 20), title, 1.0),
            Line((200, top, 210, top + 20), a, 1.0),
            Line((300, top, 310, top + 20), b, 1.0),
        ]
    out = merge_toc_numbers(lines)
    assert sorted(ln.text for ln in out) == ["3", "4", "5", "6", "Intro", "Usage"]


@pytest.mark.parametrize("rotate", [0, 90, 180, 270])
def test_character_boxes_are_pdfiums_loose_boxes_mapped_to_page_pixels(tmp_path: Path, rotate: int):
    """Each character's box is its FPDFText_GetLooseCharBox mapped by the page's PageToPixels
    (written out for /Rotate 0 and 180, the map's own box for 90 and 270): the same values."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from ocrstack.parsing.documents.pdfspace import page_to_pixels
    from support.pdfs import text_pdf

    pdf = text_pdf(
        tmp_path / "t.pdf",
        [("Boxes of a line", 72, 700, 11, "Helvetica"), ("and more", 300, 80, 20, "Times-Roman")],
    )
    if rotate:
        doc = pdfium.PdfDocument(str(pdf))
        doc[0].set_rotation(rotate)
        doc.save(str(tmp_path / "r.pdf"))
        doc.close()
        pdf = tmp_path / "r.pdf"
    size = (1275, 1650) if rotate in (0, 180) else (1650, 1275)
    got = page_text(pdf, 0, size)
    doc = pdfium.PdfDocument(str(pdf))
    page = doc[0]
    to_px = page_to_pixels(raw, page.raw, size)
    tp = page.get_textpage()
    rect = raw.FS_RECTF()
    want = []
    for i in range(raw.FPDFText_CountChars(tp.raw)):
        if raw.FPDFText_IsGenerated(tp.raw, i) != 1 and raw.FPDFText_GetLooseCharBox(tp.raw, i, rect):
            want.append(to_px.box(rect.left, rect.bottom, rect.right, rect.top))
    tp.close()
    page.close()
    doc.close()
    assert [c.bbox for c in got.chars if not c.generated] == want and len(want) == 23  # spaces included


def test_page_predicates_decided_once_are_the_per_character_rules():
    """faithful / printable lines' predicates (set lookups made once a page) accept exactly the
    characters the per-character rules accept, with and without hidden characters."""
    from ocrstack.parsing.textlayer.soundness import bad_reason, bad_reasons, faithful, hidden_reason, usable
    from ocrstack.parsing.textlayer.stage import _printable, printable

    box = (10.0, 10.0, 20.0, 30.0)
    chars = [
        Char("a", box),
        Char("\ufffd", box),
        Char("x", box, map_error=True),  # unmapped ASCII: printable, not faithful
        Char("\u00e9", box, map_error=True),  # unmapped non-ASCII: neither
        Char("\ue000", box),  # private use
        Char("b", box, render_mode=3),  # invisible
        Char("c", (5000.0, 5000.0, 5010.0, 5020.0)),  # outside the page
    ]
    pt = PageText(chars=chars, size=(1000, 1000))
    for hidden in (False, True):
        ok = usable(pt, hidden)
        want_faithful = [ok(c) and bad_reason(c) is None for c in chars]
        want_printable = [ok(c) and printable(c) for c in chars]
        assert [faithful(pt, hidden)(c) for c in chars] == want_faithful
        assert [_printable(pt, hidden)(c) for c in chars] == want_printable
        assert sum(want_faithful) == (3 if hidden else 1) and sum(want_printable) == (4 if hidden else 2)
    assert bad_reasons(pt) == [bad_reason(c) for c in chars]
    assert [hidden_reason(c, pt.size, pt.images) for c in chars][5:] == ["invisible", "outside"]
