"""The side-by-side table's language split and target verdicts (bench/accuracy_table.py)."""

from __future__ import annotations

from pathlib import Path

from ocrstack.bench.accuracy_table import Cell, language, targets


def _cell(recall: float, order: float, seconds: float, n: int = 2) -> Cell:
    return Cell(pages=[(recall, 1.0, order, seconds)] * n)


def _table(off_s: float, before_s: float, off_recall: float = 0.99) -> dict:
    return {
        "ocrstack auto": {"en": _cell(1.0, 0.99, 0.01)},
        "ocrstack off": {"en": _cell(off_recall, 0.98, off_s)},
        "ocrstack off, openvino": {"en": _cell(off_recall, 0.98, off_s / 2)},
        "ocrstack off, before": {"en": _cell(0.98, 0.97, before_s)},
        "rapidocr page": {"en": _cell(0.97, 0.95, 4.0)},
        "tesseract": {"en": Cell(skipped="tesseract not installed")},
        "text layer": {"en": _cell(1.0, 1.0, 0.001)},
    }


def test_language_from_corpus_file_names():
    assert language(Path("zh_ctex_manual.pdf")) == "zh"
    assert language(Path("math_zh_gaokao_exam.pdf")) == "zh"
    assert language(Path("en_twocol_ltnews24.pdf")) == "en"
    assert language(Path("math_crc_paper.pdf")) == "en"


def test_targets_met_when_off_is_twice_as_fast_and_beats_the_peer():
    rows = {r.metric: r for r in targets(_table(off_s=2.0, before_s=4.0))}
    assert rows["off pages/s / before issue 11"].verdict == "meets"
    assert rows["off pages/s / before issue 11"].value == 2.0
    assert rows["off pages/s / rapidocr page pages/s"].verdict == "meets"
    assert rows["off recall en vs best peer"].verdict == "meets"
    assert rows["auto pages/s / off pages/s"].value == 200.0  # info: this tree's OCR path
    assert rows["auto pages/s / before issue 11"].value == 400.0  # the target: the issue's "today"
    assert rows["auto pages/s / before issue 11"].verdict == "meets"
    assert rows["off (--ocr-runtime openvino) pages/s / before"].value == 4.0
    assert "off pages/s / tesseract pages/s" not in rows  # skipped column: no verdict against it


def test_targets_missed_are_reported_as_misses():
    rows = {r.metric: r for r in targets(_table(off_s=3.0, before_s=4.0, off_recall=0.9))}
    assert rows["off pages/s / before issue 11"].verdict == "misses"
    assert rows["off recall en vs best peer"].verdict == "misses"
    assert rows["off recall en vs best peer"].target == ">= 0.970"
    slow = _table(off_s=3.0, before_s=0.1)  # auto at 0.01 s/page is only 10x a 0.1 s/page "before"
    assert {r.metric: r for r in targets(slow)}["auto pages/s / before issue 11"].verdict == "misses"


def test_tesseract_column_is_skipped_with_the_reason_when_absent(monkeypatch):
    from ocrstack.bench import accuracy_table

    monkeypatch.setattr(accuracy_table.shutil, "which", lambda name: None)
    assert "tesseract not installed" in accuracy_table.tesseract_reason()
    assert "apt-get install tesseract-ocr tesseract-ocr-chi-sim" in accuracy_table.tesseract_reason()


def test_the_before_issue_11_recognizer_reads_crops_the_old_way():
    """The 'off, before' row's recognizer reads a block's crop as a whole image (pre-issue-11
    rapidocr, no region detection): the reread of a short block goes through ``read_region``,
    which a pre-issue ``read_lines(image)`` body must answer (a page of the side-by-side run
    failed when it did not)."""
    import pytest

    pytest.importorskip("rapidocr")
    from PIL import Image, ImageDraw, ImageFont

    from ocrstack.bench.accuracy_table import BeforeIssue11

    rec = BeforeIssue11.make()
    # square: rapidocr's detector scales the short side up to 736 px, so a 420 x 60 strip became
    # 5152 x 736 (a minute of CPU); this crop becomes 736 x 736
    img = Image.new("RGB", (300, 300), "white")
    font = ImageFont.load_default(size=26)
    ImageDraw.Draw(img).text((10, 136), "Quarterly results", fill="black", font=font)
    lines = rec.read_region(img)
    assert [ln.text for ln in lines] == [ln.text for ln in rec.read_lines(img)]
    assert "Quarterly" in " ".join(ln.text for ln in lines)
