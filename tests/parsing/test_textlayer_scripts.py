"""Issue 22 class 4: the OCR sample must not reject a sound text layer for disagreeing with a
recognizer that cannot read its script, or with a rendering that has no glyphs for it."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from ocrstack.parsing.textlayer.extract import Char, PageText, page_text
from ocrstack.parsing.textlayer.soundness import Verdict, ocr_can_judge, script_share
from ocrstack.parsing.textlayer.stage import check_sample


def _chars(text: str, y: float = 0, font: str = "F") -> list[Char]:
    return [Char(ch, (k * 10, y, (k + 1) * 10, y + 20), font=font) for k, ch in enumerate(text)]


def _garbage_reader(calls: list[int]):
    def read(crops):
        calls.append(len(crops))
        return ["1113-7.9971"] * len(crops)  # what rapidocr read on pdf.js ArabicCIDTrueType

    return read


def test_script_share_counts_letters_only() -> None:
    assert script_share("انواع الخطوط العربية", ("LATIN",)) == 0.0
    assert script_share("Mináč 2024, naïve", ("LATIN", "DIGIT")) == 1.0
    assert script_share("关于红军作战的原则", ("CJK",)) == 1.0
    assert script_share("... !!", ("LATIN",)) == 1.0


def test_arabic_layer_is_not_judged_by_a_latin_cjk_recognizer() -> None:
    pt = PageText(
        chars=_chars("انواع الخطوط العربية") + _chars("انواع الخطوط العربية", y=40), size=(400, 100)
    )
    calls: list[int] = []
    v, agreed = check_sample(pt, Verdict(True), _garbage_reader(calls), Image.new("RGB", pt.size, "white"))
    assert v.sound and v.agreement is None and calls == [] and agreed == set()
    assert "script is not one the recognizer reads" in v.sample_note


def test_unembedded_cjk_font_is_not_judged_but_a_latin_one_still_is() -> None:
    cjk = PageText(
        chars=_chars("关于红军作战的原则对国防问题", font="SimSun"), size=(400, 100), unembedded={"SimSun"}
    )
    calls: list[int] = []
    v, _ = check_sample(cjk, Verdict(True), _garbage_reader(calls), Image.new("RGB", cjk.size, "white"))
    assert v.sound and calls == [] and "not embedded" in v.sample_note
    # the same text in an embedded font is drawn, so OCR's disagreement counts
    embedded = PageText(chars=_chars("关于红军作战的原则对国防问题", font="SimSun"), size=(400, 100))
    v, _ = check_sample(
        embedded, Verdict(True), _garbage_reader(calls), Image.new("RGB", embedded.size, "white")
    )
    assert not v.sound and calls
    # a Latin run in a base-14 font PDFium substitutes is still sampled (and rejected when wrong)
    latin = PageText(
        chars=_chars("Helvetica words here", font="Helvetica"), size=(400, 100), unembedded={"Helvetica"}
    )
    assert ocr_can_judge("Helvetica words here", frozenset({"Helvetica"}), latin.unembedded) is None
    v, _ = check_sample(latin, Verdict(True), _garbage_reader(calls), Image.new("RGB", latin.size, "white"))
    assert not v.sound


def test_page_text_names_the_fonts_not_embedded(tmp_path: Path) -> None:
    from ocrstack.bench.harness import make_pdf

    pdf = make_pdf(tmp_path / "a.pdf", pages=1, lines=2)  # pypdfium2's standard Helvetica: not embedded
    pt = page_text(pdf, 0, (612, 792))
    assert pt.unembedded == {"Helvetica"}
