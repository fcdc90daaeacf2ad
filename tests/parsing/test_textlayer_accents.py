"""Issue 22 class 3: accents set as glyphs of their own compose with the letter they are set over,
and the layer's text is NFC (a PDF made here with the accents as separate text objects)."""

from __future__ import annotations

from pathlib import Path

from ocrstack.parsing.textlayer.extract import Char, page_text
from ocrstack.parsing.textlayer.lines import build_lines
from support.pdfs import text_pdf


def _run(spec: list[tuple[str, float]], y: float = 0, w: float = 10, h: float = 20) -> list[Char]:
    """Characters at given x positions (an accent glyph sits over a letter's x range)."""
    return [Char(ch, (x, y, x + w, y + h)) for ch, x in spec]


def test_accent_after_or_before_its_letter_composes() -> None:
    # "Mináč" as PDFium gives TeX's output: M i n [space] ´ [space] a c [space] ˇ
    chars = _run([("M", 0), ("i", 10), ("n", 20)]) + [Char(" ", (0, 0, 0, 0), generated=True)]
    chars += _run([("\u00b4", 31)]) + [Char(" ", (0, 0, 0, 0), generated=True)]
    chars += _run([("a", 30), ("c", 40)]) + [Char(" ", (0, 0, 0, 0), generated=True)] + _run([("\u02c7", 41)])
    assert [ln.text for ln in build_lines(chars)] == ["Min\u00e1\u010d"]


def test_an_accent_given_words_after_its_letter_finds_it() -> None:
    # olmOCR sample math_2503_04086 as PDFium orders it: J a n [sp] M i n [sp] ´(over the first a) [sp] a ´ c
    chars = _run([("J", 0), ("a", 10), ("n", 20)]) + [Char(" ", (0, 0, 0, 0), generated=True)]
    chars += _run([("M", 40), ("i", 50), ("n", 60)]) + [Char(" ", (0, 0, 0, 0), generated=True)]
    chars += _run([("\u00b4", 11)]) + [Char(" ", (0, 0, 0, 0), generated=True)]
    chars += _run([("a", 70), ("\u00b4", 71), ("c", 80)])
    assert [ln.text for ln in build_lines(chars)] == ["J\u00e1n Min\u00e1c"]


def test_a_word_starting_with_an_accented_letter_keeps_its_space() -> None:
    chars = _run([("l", 0), ("e", 10)]) + [Char(" ", (0, 0, 0, 0), generated=True)]
    chars += _run([("\u00b4", 31), ("e", 30), ("t", 40), ("\u00e9", 50)])
    assert [ln.text for ln in build_lines(chars)] == ["le \u00e9t\u00e9"]


def test_a_spacing_accent_over_no_letter_stays_and_decomposed_text_is_composed() -> None:
    chars = _run([("a", 0), ("`", 30), ("b", 60)])  # a backtick with room around it: code, not an accent
    chars += _run([("e", 70), ("\u0301", 72)])  # e + COMBINING ACUTE from the layer itself
    assert [ln.text for ln in build_lines(chars)] == ["a`b\u00e9"]


def _pdf_with_separate_accents(path: Path) -> Path:
    runs = [
        ("Min", 20, 50, 20.0, "Helvetica"),  # Helvetica 20 pt: M 16.7, i 4.4, n 11.1 -> "a" at 52.2
        ("\u00b4", 54, 50, 20.0, "Helvetica"),  # acute over the a (Helvetica's acute 6.7 wide, the a 11.1)
        ("ae", 52.2, 50, 20.0, "Helvetica"),
        (
            "\u00a8",
            65,
            50,
            20.0,
            "Helvetica",
        ),  # dieresis over the e (e at 63.3, 11.1 wide); WinAnsi has no caron
    ]
    return text_pdf(path, runs, page=(300, 100))


def test_a_pdf_with_accent_glyphs_reads_composed(tmp_path: Path) -> None:
    pdf = _pdf_with_separate_accents(tmp_path / "accents.pdf")
    pt = page_text(pdf, 0, (300, 100))
    raw_text = "".join(c.text for c in pt.chars if not c.generated)
    assert "\u00b4" in raw_text and "\u00a8" in raw_text  # the layer really has separate accents
    assert [ln.text for ln in build_lines(pt.chars)] == ["Min\u00e1\u00eb"]


def _pdf_with_text(path: Path, text: str) -> Path:
    return text_pdf(path, [(text, 20, 50, 20.0, "Helvetica")], page=(400, 100))


def test_a_pair_of_single_quotes_reads_as_the_double_quote(tmp_path: Path) -> None:
    # issue 22 class 3: a typesetter without the double-quote glyph sets two single quotes
    pdf = _pdf_with_text(tmp_path / "quotes.pdf", "the \u2018\u2018term\u2019\u2019 and \u2018one\u2019")
    pt = page_text(pdf, 0, (400, 100))
    assert "\u2018\u2018" in "".join(c.text for c in pt.chars)  # the layer really has the pairs
    assert [ln.text for ln in build_lines(pt.chars)] == ["the \u201cterm\u201d and \u2018one\u2019"]


def test_ascii_apostrophe_pairs_stay() -> None:
    chars = _run([("f", 0), ("'", 10), ("'", 20), ("x", 30)])  # a double prime, not a quote
    assert [ln.text for ln in build_lines(chars)] == ["f''x"]
