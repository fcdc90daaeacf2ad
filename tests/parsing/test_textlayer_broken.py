"""Broken text layers made with pikepdf from a real corpus page (issue 11: "pages with a broken
text layer fall back to OCR, with the reason recorded").

Each case starts from en_single_libtasn1_intro.pdf (TeX Type1 fonts with ToUnicode maps) and
breaks one thing: ToUnicode maps pointing at private-use or control code points, or at the
wrong letters (only the OCR sample can tell), an image painted over the text, a page box
that leaves the text outside. The verdict must be "not sound" with the matching reason.
"""

from __future__ import annotations

from pathlib import Path

import pikepdf
import pytest

from ocrstack.parsing import documents
from ocrstack.parsing.textlayer.stage import check_sample, read_page
from ocrstack.parsing.types import PageImage

SOURCE = "en_single_libtasn1_intro.pdf"


def _cmap(mapping: dict[int, int]) -> bytes:
    """A ToUnicode CMap with one bfchar entry per one-byte code (at most 100 per block)."""
    items = sorted(mapping.items())
    body = b""
    for k in range(0, len(items), 100):
        chunk = items[k : k + 100]
        body += f"{len(chunk)} beginbfchar\n".encode()
        body += b"".join(f"<{c:02X}> <{u:04X}>\n".encode() for c, u in chunk)
        body += b"endbfchar\n"
    return (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
        b"/CMapName /Broken def 1 begincodespacerange <00> <FF> endcodespacerange\n"
        + body
        + b"endcmap CMapName currentdict /CMap defineresource pop end end\n"
    )


def _remap(src: Path, dst: Path, target: int | None) -> Path:
    """Every font's ToUnicode replaced: codes 0x00-0xFF map to private-use ``target + code``
    (``target`` >= 0xE000), to the control character ``target`` (< 0x20), or (``None``) to the
    next letter, 'a' -> 'b', 'z' -> 'a': valid letters, wrong words."""
    if target is None:
        mapping = {
            c: (ord("a") + (c - ord("a") + 1) % 26 if chr(c).isalpha() else c) for c in range(0x21, 0x7F)
        }
        mapping.update({c: ord("A") + (c - ord("A") + 1) % 26 for c in range(ord("A"), ord("Z") + 1)})
    elif target >= 0xE000:
        mapping = {c: target + c for c in range(256)}
    else:
        mapping = dict.fromkeys(range(256), target)
    with pikepdf.open(src) as pdf:
        for font in pdf.pages[0].Resources.Font.values():
            font.ToUnicode = pikepdf.Stream(pdf, _cmap(mapping))
        pdf.save(dst)
    return dst


def _page(path: Path) -> PageImage:
    (page,) = documents.iter_pages(path, dpi=100)
    return page


@pytest.fixture
def source(corpus: Path) -> Path:
    return corpus / SOURCE


def test_the_unbroken_page_is_sound(source):
    pt, verdict = read_page(_page(source), "auto")
    assert verdict.sound, verdict.reasons
    assert pt is not None and verdict.counts["visible"] > 900


def test_private_use_tounicode_falls_back_with_the_reason(source, tmp_path):
    pt, verdict = read_page(_page(_remap(source, tmp_path / "pua.pdf", 0xE000)), "auto")
    assert not verdict.sound
    assert any("unfaithful" in r and "private-use" in r for r in verdict.reasons), verdict.reasons


def test_control_character_tounicode_falls_back_with_the_reason(source, tmp_path):
    pt, verdict = read_page(_page(_remap(source, tmp_path / "ctl.pdf", 0x0001)), "auto")
    assert not verdict.sound
    assert any("unfaithful" in r and "control" in r for r in verdict.reasons), verdict.reasons


def test_on_uses_a_broken_layer_but_keeps_the_reason(source, tmp_path):
    pt, verdict = read_page(_page(_remap(source, tmp_path / "pua.pdf", 0xE000)), "on")
    assert verdict.sound
    assert any(r.startswith("used anyway (--text-layer on)") and "private-use" in r for r in verdict.reasons)


def test_off_never_reads_the_layer(source):
    pt, verdict = read_page(_page(source), "off")
    assert pt is None and not verdict.sound and verdict.reasons == ["--text-layer off"]


def test_text_painted_over_by_an_image_is_hidden(source, tmp_path):
    dst = tmp_path / "covered.pdf"
    with pikepdf.open(source) as pdf:
        page = pdf.pages[0]
        image = pikepdf.Stream(pdf, b"\xff\xff\xff")
        image.Type, image.Subtype = pikepdf.Name.XObject, pikepdf.Name.Image
        image.Width, image.Height, image.BitsPerComponent = 1, 1, 8
        image.ColorSpace = pikepdf.Name.DeviceRGB
        page.Resources.XObject = pikepdf.Dictionary(Im0=image)
        page.contents_add(pikepdf.Stream(pdf, b"q 612 0 0 792 0 0 cm /Im0 Do Q"), prepend=False)
        pdf.save(dst)
    pt, verdict = read_page(_page(dst), "auto")
    assert not verdict.sound
    assert verdict.counts["under-image"] > 900
    assert any("hidden" in r and "under-image" in r for r in verdict.reasons), verdict.reasons


def test_text_outside_the_page_box_is_hidden(source, tmp_path):
    dst = tmp_path / "outside.pdf"
    with pikepdf.open(source) as pdf:
        pdf.pages[0].MediaBox = pikepdf.Array([0, 0, 612, 300])  # keeps the bottom 300 pt only
        pdf.save(dst)
    pt, verdict = read_page(_page(dst), "auto")
    assert not verdict.sound
    assert any("hidden" in r and "outside" in r for r in verdict.reasons), verdict.reasons


@pytest.mark.corpus
def test_wrong_letters_are_caught_by_the_ocr_sample(source, tmp_path):
    """Every glyph maps to the next letter: all characters look valid, only OCR disagrees."""
    from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer

    read = RapidOcrRecognizer().read_line_crops
    page = _page(source)
    pt, verdict = read_page(page, "auto")
    good, fonts = check_sample(pt, verdict, read, page.image)
    assert good.sound and good.agreement is not None and good.agreement >= 0.9
    assert fonts and fonts <= {c.font for c in pt.chars}  # the sampled lines' fonts agreed
    again, more = check_sample(pt, verdict, read, page.image, checked=frozenset({c.font for c in pt.chars}))
    assert again.sound and again.agreement is None and more == set()
    assert "earlier page" in again.to_json()["ocr_sample"]
    page = _page(_remap(source, tmp_path / "shifted.pdf", None))
    pt, verdict = read_page(page, "auto")
    assert verdict.sound  # the character checks cannot see it
    bad, bad_fonts = check_sample(pt, verdict, read, page.image, checked=frozenset())
    assert bad_fonts == set()  # a font that disagreed is never recorded as checked
    assert not bad.sound and bad.agreement is not None and bad.agreement < 0.5  # measured 0.38
    assert any("disagree with OCR" in r for r in bad.reasons), bad.reasons
