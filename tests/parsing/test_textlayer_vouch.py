"""The text layer judged without OCR (issue 21): fonts whose words read as language, ink where
the layer puts its lines; a page that does not pass still takes the OCR sample."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pikepdf
import pytest
from PIL import Image
from tests.parsing.test_textlayer_broken import _cmap

from ocrstack.parsing import documents, ink
from ocrstack.parsing.textlayer.extract import Char
from ocrstack.parsing.textlayer.stage import read_page, vouch_page
from ocrstack.parsing.textlayer.vouch import font_texts, inked_share, vouch

ENGLISH = (
    "This document describes how the library reads a file and what it does with the data when "
    "one of its parts is missing, so that the user can see which of the options is used and why it "
    "was chosen over the other ones that are in the list"
)
CHINESE = (
    "这个文档说明了我们在使用中的一些方法和要求，如果你对这些问题有不同的看法，"
    "可以在下面的地方提出来，我们会在以后的工作中进行改进和说明"
)
CODE = "bzip2 -dc file.bz2 | tar xf - ; gzip -9 archive.tar ; bunzip2 --keep --verbose data.bz2 stdout stdin"


def _shift(text: str, k: int = 1) -> str:
    """Every letter the k-th next one (a wrong ToUnicode map: valid letters, wrong words)."""
    out = []
    for ch in text:
        if "a" <= ch <= "z":
            ch = chr(ord("a") + (ord(ch) - ord("a") + k) % 26)
        elif "A" <= ch <= "Z":
            ch = chr(ord("A") + (ord(ch) - ord("A") + k) % 26)
        elif "\u4e00" <= ch <= "\u9fff":
            ch = chr(ord(ch) + k)
        out.append(ch)
    return "".join(out)


def _chars(text: str, font: str, y: float = 0) -> list[Char]:
    """One line of ``text`` in ``font``, 10 px a character; spaces as PDFium's generated ones."""
    return [
        Char(ch, (k * 10.0, y, k * 10.0 + 10, y + 20), generated=ch == " ", font=font)
        for k, ch in enumerate(text)
    ]


def _all(c: Char) -> bool:
    return True


def test_body_text_reads_as_language_and_a_shifted_map_or_code_does_not():
    texts = font_texts(
        _chars(ENGLISH, "Body") + _chars(_shift(ENGLISH), "Shifted") + _chars(CODE, "Mono"), _all
    )
    assert texts["Body"].reads_as_language()
    assert texts["Body"].common >= 0.3 * texts["Body"].latin
    for k in (1, 3, 13):
        assert not font_texts(_chars(_shift(ENGLISH, k), "F"), _all)["F"].reads_as_language(), k
    assert not texts["Mono"].reads_as_language()  # code is not prose: its page needs other fonts
    han = font_texts(_chars(CHINESE, "Song") + _chars(_shift(CHINESE), "Wrong"), _all)
    assert han["Song"].reads_as_language() and han["Song"].cjk == len(CHINESE) - 3  # the commas
    assert not han["Wrong"].reads_as_language()


def test_a_page_needs_no_sample_when_most_of_its_words_read_as_language_and_show_ink():
    body = _chars(ENGLISH, "Body", y=0) + _chars(CODE, "Mono", y=40)
    lines_ = [_line(ENGLISH, 0), _line(CODE, 40)]
    inked = _page_grey(lines_)
    got = vouch(body, _all, lines_, inked)
    assert got.fonts == {"Body"} and got.note is not None and "100% of its text shows ink" in got.note
    # the code font counts once the document vouched for it; a shifted body leaves the page to OCR
    shifted = _chars(_shift(ENGLISH), "Body", y=0) + _chars(CODE, "Mono", y=40)
    bad = vouch(shifted, _all, lines_, inked)
    assert bad.fonts == set() and bad.note is None
    # fonts checked earlier in the document count: a page of code alone in a known font passes
    assert vouch(_chars(CODE, "Mono"), _all, [_line(CODE, 0)], inked, frozenset({"Mono"})).note
    assert vouch(_chars(CODE, "Mono"), _all, [_line(CODE, 0)], inked).note is None


def test_text_without_ink_or_under_a_black_box_is_left_to_the_ocr_sample():
    body = _chars(ENGLISH, "Body")
    lines_ = [_line(ENGLISH, 0)]
    white = Image.new("L", (3000, 100), 255)  # painted over by a white shape, or white text
    black = Image.new("L", (3000, 100), 0)  # a black box over the text (a redaction)
    assert inked_share(lines_, _page_grey(lines_)) == 1.0
    assert inked_share(lines_, white) == 0.0 and inked_share(lines_, black) == 0.0
    for grey in (white, black):
        got = vouch(body, _all, lines_, grey)
        assert got.fonts == {"Body"} and got.note is None  # the font reads well; the page is sampled


def _line(text: str, y: float):
    from ocrstack.parsing.lines.assign import Line

    return Line((0.0, y, 10.0 * len(text), y + 20), text, 1.0)


def _page_grey(lines_) -> Image.Image:
    """A white page with text-like ink (one dark column in four) in every line's box."""
    grey = np.full((100, 3000), 255, np.uint8)
    for ln in lines_:
        x0, y0, x1, y1 = (round(v) for v in ln.bbox)
        grey[y0 + 4 : y1 - 4, x0:x1:4] = 0
    return Image.fromarray(grey)


def _sound_page(pdf: Path, index: int = 0):
    (page,) = documents.iter_pages(pdf, pages=str(index + 1), dpi=200)
    pt, verdict = read_page(page, "auto")
    assert pt is not None and verdict.sound
    return page, pt


@pytest.mark.corpus
def test_every_dev_corpus_page_is_vouched_for_and_no_shifted_copy_is(corpus, tmp_path):
    """The measured claim of the module docstring, on the real pages: every born-digital dev
    page passes without OCR; the same PDFs with every font's ToUnicode map shifted by 1, 3 or 13
    letters (valid letters, wrong words) never do, and none of their fonts is vouched for."""
    from ocrstack.bench.textlayer import dev_files

    for pdf in dev_files(corpus):
        for i in range(documents.count_pages(pdf)):
            page, pt = _sound_page(pdf, i)
            got = vouch_page(pt, ink.grey(page.image))
            assert got.note is not None, (pdf.name, i)
    names = ("en_single_libtasn1_intro", "en_twocol_ltnews24", "math_crc_paper", "en_single_bzip2_manual")
    for name in names:
        for k in (1, 3, 13):
            broken = _remap_all(corpus / f"{name}.pdf", tmp_path / f"{name}-{k}.pdf", k)
            for i in range(documents.count_pages(broken)):
                page, pt = _sound_page(broken, i)  # the character checks cannot see it
                got = vouch_page(pt, ink.grey(page.image))
                assert got.note is None and got.fonts == set(), (name, k, i)


def _remap_all(src: Path, dst: Path, k: int) -> Path:
    """Every font of every page: printable ASCII letters mapped to the k-th next letter."""
    mapping = {c: ord(_shift(chr(c), k)) for c in range(0x21, 0x7F)}
    with pikepdf.open(src) as pdf:
        for p in pdf.pages:
            for font in p.Resources.Font.values():
                font.ToUnicode = pikepdf.Stream(pdf, _cmap(mapping))
        pdf.save(dst)
    return dst


#: Run in a fresh interpreter: parse argv[1] into argv[2] with the default parser, then print the
#: model runtimes imported and whether the recognizer ever built its engine.
_PARSE_AND_LIST = """
import json, sys
from pathlib import Path
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import pipeline
from ocrstack.parsing.stages import Parser
options = ParseOptions(inputs=(Path(sys.argv[1]),), output=Path(sys.argv[2]), force=True)
parser = Parser(options)
pipeline.run(options, progress=False, echo=lambda s: None, parser=parser)
heavy = ("onnxruntime", "openvino", "rapidocr", "rapid_layout", "cv2")
print(json.dumps({"imported": sorted(m for m in heavy if m in sys.modules),
                  "recognizer_built": parser.recognizer._engine is not None}))
"""


def _parse_in_a_fresh_process(pdf: Path, out: Path) -> tuple[dict, dict]:
    import json
    import subprocess
    import sys

    cp = subprocess.run(
        [sys.executable, "-c", _PARSE_AND_LIST, str(pdf), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert cp.returncode == 0, cp.stderr[-2000:]
    blocks = json.loads((out / f"{pdf.stem}.blocks.json").read_text(encoding="utf-8"))
    return json.loads(cp.stdout.strip().splitlines()[-1]), blocks


@pytest.mark.proc
def test_a_born_digital_parse_without_ocr_loads_no_model(tmp_path):
    """A plain-text born-digital PDF is parsed with no model at all: neither the recognizer
    (no OCR sample: its words read as language) nor the layout model, and none of their
    runtimes is imported."""
    from ocrstack.bench.harness import make_pdf

    seen, doc = _parse_in_a_fresh_process(make_pdf(tmp_path / "plain.pdf", 3), tmp_path / "out")
    assert seen == {"imported": [], "recognizer_built": False}
    assert doc["model"]["layout_runtime"] == "not loaded"
    assert all("not taken" in p["text_layer"]["ocr_sample"] for p in doc["pages"])


@pytest.mark.proc
@pytest.mark.corpus
def test_a_page_that_needs_the_layout_model_still_loads_no_recognizer(corpus, tmp_path):
    seen, doc = _parse_in_a_fresh_process(corpus / "tables_booktabs_ruled_vs_booktabs.pdf", tmp_path / "out")
    assert doc["model"]["layout_runtime"] == "openvino-f32"
    assert {b["source"] for p in doc["pages"] for b in p["blocks"]} == {"text-layer"}
    assert seen["recognizer_built"] is False and "onnxruntime" not in seen["imported"]
    assert "rapidocr" not in seen["imported"]
    assert "rapid_layout" not in seen["imported"]  # its PP steps run from their files (layout.rapid)


@pytest.mark.corpus
def test_a_shifted_layer_still_takes_the_ocr_sample_and_falls_back(corpus, tmp_path):
    """Every letter mapped to the next one: the words do not read as language, so the stage takes
    the OCR sample as before, which disagrees; the page is read by OCR."""
    import json

    from ocrstack.parsing.options import ParseOptions
    from ocrstack.parsing.run import pipeline

    pdf = _remap_all(corpus / "en_single_libtasn1_intro.pdf", tmp_path / "shifted.pdf", 1)
    out = tmp_path / "out"
    pipeline.run(ParseOptions(inputs=(pdf,), output=out), progress=False, echo=lambda s: None)
    page = json.loads((out / "shifted.blocks.json").read_text(encoding="utf-8"))["pages"][0]
    assert page["text_layer"]["sound"] is False and "ocr_sample" not in page["text_layer"]
    assert any("disagree with OCR" in r for r in page["text_layer"]["reasons"])
    assert {b["source"] for b in page["blocks"]} == {"ocr"}
