"""Issue 22 class 5: an OCR line is cut at its wide gaps, as the text layer's lines are, from the
recognizer's own CTC columns (:mod:`ocrstack.parsing.recognition.rapidocr.words`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ocrstack.parsing.lines.assign import Line
from ocrstack.parsing.recognition.rapidocr.words import pieces, spans


def test_spans_place_words_by_their_ctc_columns() -> None:
    # rapidocr's WordInfo for "3.32T 21.32T": 40 columns over a 400 px crop (10 px a column)
    info = SimpleNamespace(
        words=[list("3.32T"), list("21.32T")],
        word_cols=[[1, 2, 3, 4, 5], [20, 21, 23, 24, 25, 26]],
        line_txt_len=40,
    )
    assert spans(info, 400) == (("3.32T", 10.0, 60.0), ("21.32T", 200.0, 272.0))  # last char: the pitch
    assert (
        spans(None, 400) == () and spans(SimpleNamespace(words=[], word_cols=[], line_txt_len=0), 400) == ()
    )


def test_a_line_is_cut_at_gaps_wider_than_a_line_and_a_half() -> None:
    line = Line((100, 50, 500, 70), "3.32T  21.32T 2.95B", 0.9)  # 20 px high, crop 400 px wide
    words = (("3.32T", 0.0, 50.0), ("21.32T", 150.0, 210.0), ("2.95B", 218.0, 270.0))
    out = pieces(line, words, 400)
    assert [(p.text, p.bbox) for p in out] == [
        ("3.32T", (100, 50, 150, 70)),
        ("21.32T 2.95B", (250, 50, 370, 70)),
    ]
    assert all(p.score == 0.9 for p in out)


def test_lines_without_a_wide_gap_or_turned_stay_whole() -> None:
    line = Line((100, 50, 500, 70), "the quick brown fox", 0.9)
    words = (("the", 0.0, 30.0), ("quick", 40.0, 90.0), ("brown", 100.0, 150.0), ("fox", 160.0, 190.0))
    assert pieces(line, words, 400) == [line]
    wide = (("the", 0.0, 30.0), ("quick", 200.0, 250.0))
    turned = Line((100, 50, 500, 70), "the quick", 0.9, angle=5.0)
    assert pieces(turned, wide, 400) == [turned]
    assert pieces(Line((100, 50, 500, 70), "the quick", 0.9, flipped=True), wide, 400)[0].text == "the quick"
    # words that do not add up to the text (a reading the spans do not describe): no cut
    assert pieces(Line((100, 50, 500, 70), "other", 0.9), wide, 400)[0].text == "other"
    # a cut where the recognizer read no space (a CJK run's end placed short): no cut
    cjk = Line((100, 50, 500, 70), "直到遇到“delimiter”", 0.9)
    assert pieces(cjk, (("直到遇到", 0.0, 60.0), ("“delimiter”", 150.0, 300.0)), 400) == [cjk]


@pytest.mark.slow
def test_the_recognizer_places_the_words_of_a_line_with_a_gutter() -> None:
    """Through rapidocr's recognizer on a made line image (no detector: one crop holding two
    figures 3.5 line heights apart): its CTC columns place the words, and the line is cut there."""
    pytest.importorskip("rapidocr")
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    from ocrstack.parsing.recognition.rapidocr import reading
    from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer
    from ocrstack.parsing.recognition.rapidocr.words import WordBoxes

    font = ImageFont.load_default(size=28)
    img = Image.new("RGB", (420, 40), "white")
    draw = ImageDraw.Draw(img)
    draw.text((6, 4), "3.32T", fill="black", font=font)
    draw.text((230, 4), "21.32T", fill="black", font=font)
    crop = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    rec = WordBoxes(reading.stage_model(RapidOcrRecognizer().engine(), "rec"))
    (text,), _ = reading.recognize(rec, [crop])
    (words,) = rec.spans([crop])
    assert [w[0] for w in words] == ["3.32T", "21.32T"], (text, words)
    assert words[0][2] < 130 and words[1][1] > 190  # where the figures were drawn (6-90, 230-330)
    out = pieces(Line((0, 0, 420, 40), text, 0.9), words, 420)
    assert [p.text for p in out] == ["3.32T", "21.32T"]
