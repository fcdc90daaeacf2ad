"""Accuracy of the embedded default on the real corpus, against the PDFs' text layers (issue 3).

What is measured, per page of a representative subset of the born-digital dev files
(:data:`SUBSET`, 15 pages: every dev file with a text layer except the 4-page encrypted
one, which the loading tests cover, and at most two pages per file) at 200 DPI:

* word recall and character error rate (:mod:`ocrstack.bench.metrics`) of the Markdown the
  README command produces (rapid-layout + rapidocr, paratext dropped);
* the same with ``--layout none`` and with paratext kept, for the layout-vs-whole-page test;
* word-sequence similarity (order-aware) on the two- and three-column pages, and the same
  measure for rapidocr's own y-sorted line order, which interleaves the columns.

The figures are stored in ``tests/data/accuracy_baseline.json``. Regenerate them after a
deliberate change with ``OCRSTACK_REGEN=1 pytest tests/parsing/test_accuracy.py -m corpus -k regenerate``
and commit the file; :func:`test_regeneration_flag_is_off` fails while the flag is set, so
a regenerated baseline can never pass silently. Thresholds = stored figure minus a margin:
``RECALL_MARGIN`` (0.005, about one word in 200: onnxruntime versions and CPUs may differ
in the last digit of a score), ``CER_MARGIN`` (0.01) and ``SEQUENCE_MARGIN`` (0.01). The
default output (paratext dropped) may find at most ``CONTENT_TOKENS_LOST`` (1) token of the
page's content (its text layer minus the hand-listed :data:`PARATEXT`) fewer than whole-page
OCR of the same page (issue 3: recognising only layout crops once lost 17% of the bzip2
lines; the review: dropping a masthead labelled header must fail it).

CPU: the OCR of each page runs once per test run, shared by the xdist workers
(tests/support/parse_helpers.py memo): about 15 page reads, 1.5-3 minutes on two cores. The
measuring tests are the ``heavy`` suite: ``scripts/test -m heavy`` (``.ci/run``'s own step,
``nox -s heavy``); the default run checks the stored baseline's shape only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from statistics import mean

import pytest

from ocrstack.bench.metrics import cer, markdown_text, sequence_similarity, word_hits, word_recall
from ocrstack.parsing import documents
from ocrstack.parsing.reading_order import rows

BASELINE = Path(__file__).resolve().parents[1] / "data" / "accuracy_baseline.json"
REGEN = os.environ.get("OCRSTACK_REGEN") == "1"
RECALL_MARGIN = 0.005
CER_MARGIN = 0.01
SEQUENCE_MARGIN = 0.01
CONTENT_TOKENS_LOST = 1

#: (file stem, 0-based page)
SUBSET = [
    ("en_single_bzip2_manual", 0),
    ("en_single_bzip2_manual", 1),
    ("en_single_libtasn1_intro", 0),
    ("en_twocol_ltnews24", 0),
    ("en_twocol_ltnews24", 1),
    ("en_multicol_pari_refcard", 0),
    ("tables_booktabs_ruled_vs_booktabs", 0),
    ("tables_googledocs_grid", 0),
    ("tables_zh_debian_reference", 0),
    ("math_crc_paper", 0),
    ("math_mathtools_doc", 0),
    ("math_zh_gaokao_exam", 0),
    ("zh_ctex_manual", 0),
    ("zh_ctex_manual", 1),
    ("odd_rotated_text_boxes", 0),
]
#: Running heads, page numbers and footers of each page, copied by hand from the PDF's text
#: layer (NAME.txt) after looking at the rendered page: the paratext the default output may
#: drop. Everything else on the page is content, which the default must keep.
PARATEXT = {
    "en_single_bzip2_manual:1": "How to use bzip2\n3",
    "en_single_bzip2_manual:2": "How to use bzip2\n4",
    "en_single_libtasn1_intro:1": "1",
    "en_twocol_ltnews24:1": "LATEX News, and the LATEX software, are brought to you by the LATEX "
    "Project Team; Copyright 2016, all rights reserved.",
    "en_twocol_ltnews24:2": "–2",
    "tables_booktabs_ruled_vs_booktabs:1": "2",
    "tables_zh_debian_reference:1": "Debian 参考手册 28 / 223",
    "math_crc_paper:1": "6",
    "math_mathtools_doc:1": "7",
    "math_zh_gaokao_exam:1": "绝密 ★ 启用前\n数学试题第 1 页（共 3 页）",
    "zh_ctex_manual:1": "第 3 节 宏包选项与 \\ctexset 命令 5",
    "zh_ctex_manual:2": "第 5 节 排版格式设定 10",
}
MULTICOLUMN = [("en_twocol_ltnews24", 0), ("en_twocol_ltnews24", 1), ("en_multicol_pari_refcard", 0)]
#: Single-column pages whose reading order the column split once broke (review of issue 3:
#: side-by-side choices, label grids, rotated boxes read column-wise): order is checked
#: against the stored figures so a regression there fails.
SINGLE_COLUMN_ORDER = [
    ("tables_zh_debian_reference", 0),
    ("math_zh_gaokao_exam", 0),
    ("tables_booktabs_ruled_vs_booktabs", 0),
    ("odd_rotated_text_boxes", 0),
]
ENGLISH_TEXT = [k for k in SUBSET if k[0].startswith(("en_", "tables_booktabs", "tables_googledocs"))]
CHINESE_TEXT = [k for k in SUBSET if k[0] in ("zh_ctex_manual", "tables_zh_debian_reference")]


def _key(stem: str, page: int) -> str:
    return f"{stem}:{page + 1}"


def _scores(gold: str, text: str) -> dict[str, float]:
    return {
        "recall": round(word_recall(gold, text), 4),
        "cer": round(cer(gold, text), 4),
        "sequence": round(sequence_similarity(gold, text), 4),
    }


def measure(corpus: Path, stem: str, page: int) -> dict:
    """All figures of one page (see the module docstring)."""
    from support.parse_helpers import MEMO, markdown, parse, truth

    gold = truth(corpus, stem, page)
    layout = parse(corpus, f"{stem}.pdf", page, "rapid-layout")
    whole = parse(corpus, f"{stem}.pdf", page, "none")
    sha = documents.file_sha256(corpus / f"{stem}.pdf")
    lines = next(v for k, v in MEMO.items() if k[0] == sha and k[1] == page)[1]
    boxes = [ln.bbox for ln in lines]
    y_sorted = "\n".join(lines[i].text for r in rows(boxes) for i in r)
    default_text = markdown_text(markdown(layout))
    whole_text = markdown_text(markdown(whole, keep_paratext=True))
    paratext = PARATEXT.get(_key(stem, page), "")
    return {
        "default": _scores(gold, default_text),
        # content tokens (PARATEXT taken out of the truth) and how many each output has
        "content_tokens": {
            "truth": word_hits(gold, "", exclude=paratext)[1],
            "default_found": word_hits(gold, default_text, exclude=paratext)[0],
            "whole_page_found": word_hits(gold, whole_text, exclude=paratext)[0],
        },
        "layout_keep_paratext": _scores(gold, markdown_text(markdown(layout, keep_paratext=True))),
        "whole_page": _scores(gold, whole_text),
        "rapidocr_y_order_sequence": round(sequence_similarity(gold, y_sorted), 4),
        "ocr_seconds": round(layout.timings.get("orient", 0.0) + layout.timings.get("recognise", 0.0), 2),
    }


@pytest.fixture(scope="module")
def baseline() -> dict:
    if not BASELINE.is_file():
        pytest.fail(
            f"{BASELINE} missing: run OCRSTACK_REGEN=1 pytest tests/parsing/test_accuracy.py "
            "-m corpus -k regenerate"
        )
    return json.loads(BASELINE.read_text(encoding="utf-8"))


def test_regeneration_flag_is_off():
    assert not REGEN, "OCRSTACK_REGEN=1 is set: the baseline was (re)written; unset it and rerun to check it"


def test_baseline_covers_the_subset_and_is_sane(baseline):
    assert set(baseline["pages"]) == {_key(*k) for k in SUBSET}
    for key, fig in baseline["pages"].items():
        for variant in ("default", "layout_keep_paratext", "whole_page"):
            assert 0 <= fig[variant]["recall"] <= 1 and fig[variant]["cer"] >= 0, key
    assert baseline["margins"] == {
        "recall": RECALL_MARGIN,
        "cer": CER_MARGIN,
        "sequence": SEQUENCE_MARGIN,
        "layout_content_tokens_lost": CONTENT_TOKENS_LOST,
    }


@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.skipif(not REGEN, reason="set OCRSTACK_REGEN=1 to rewrite tests/data/accuracy_baseline.json")
def test_regenerate_baseline(corpus):
    pages = {_key(s, p): measure(corpus, s, p) for s, p in SUBSET}
    from ocrstack.parsing.outputs import atomic_write_json, engine_versions

    atomic_write_json(
        BASELINE,
        {
            "schema": 1,
            "regenerate": "OCRSTACK_REGEN=1 pytest tests/parsing/test_accuracy.py -m corpus -k regenerate",
            "dpi": 200,
            "default_command": "ocrstack parse FILE.pdf -o OUT (rapid-layout + rapidocr, paratext dropped)",
            "versions": engine_versions(),
            "margins": {
                "recall": RECALL_MARGIN,
                "cer": CER_MARGIN,
                "sequence": SEQUENCE_MARGIN,
                "layout_content_tokens_lost": CONTENT_TOKENS_LOST,
            },
            "pages": pages,
        },
    )


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize(("stem", "page"), SUBSET, ids=[_key(*k) for k in SUBSET])
def test_words_match_text_layer_within_stored_thresholds(corpus, baseline, stem, page):
    got = measure(corpus, stem, page)["default"]
    want = baseline["pages"][_key(stem, page)]["default"]
    assert got["recall"] >= want["recall"] - RECALL_MARGIN, (got, want)
    assert got["cer"] <= want["cer"] + CER_MARGIN, (got, want)


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize(("stem", "page"), SUBSET, ids=[_key(*k) for k in SUBSET])
def test_default_output_keeps_the_content_whole_page_ocr_reads(corpus, stem, page):
    """What users get (rapid-layout, paratext dropped) against whole-page OCR of the same
    page, both counted on the page's content: the truth minus the hand-listed PARATEXT of
    that page, so dropping a running head or page number costs nothing and dropping anything
    else counts. At most CONTENT_TOKENS_LOST (1) content token fewer than whole-page OCR:
    the multiset count lets a running-head word that whole-page OCR kept stand in for a
    content word it misread elsewhere (bzip2 pages 1 and 2: 1 token each). Measured with the
    header rule of the review fixes switched off, the dropped masthead of
    en_twocol_ltnews24 p1 loses 3 tokens and the pari refcard title 4: both fail this."""
    got = measure(corpus, stem, page)["content_tokens"]
    assert got["default_found"] >= got["whole_page_found"] - CONTENT_TOKENS_LOST, got


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize(("stem", "page"), MULTICOLUMN, ids=[_key(*k) for k in MULTICOLUMN])
def test_multi_column_pages_come_out_in_column_order(corpus, baseline, stem, page):
    got = measure(corpus, stem, page)
    want = baseline["pages"][_key(stem, page)]["default"]["sequence"]
    assert got["default"]["sequence"] >= want - SEQUENCE_MARGIN, got
    # the measure does see interleaving: rapidocr's own y order scores clearly lower
    assert got["default"]["sequence"] >= got["rapidocr_y_order_sequence"] + 0.05, got


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize(("stem", "page"), SINGLE_COLUMN_ORDER, ids=[_key(*k) for k in SINGLE_COLUMN_ORDER])
def test_single_column_pages_keep_their_order(corpus, baseline, stem, page):
    got = measure(corpus, stem, page)["default"]["sequence"]
    assert got >= baseline["pages"][_key(stem, page)]["default"]["sequence"] - SEQUENCE_MARGIN, got


def test_paratext_list_names_subset_pages_and_text_of_their_text_layer(corpus):
    """PARATEXT is copied from the text layer: every entry is a subset page and its tokens
    occur on that page's text layer."""
    from collections import Counter

    from ocrstack.bench.metrics import tokens
    from support.parse_helpers import truth

    keys = {_key(*k): k for k in SUBSET}
    for key, text in PARATEXT.items():
        assert key in keys, key
        assert not Counter(tokens(text)) - Counter(tokens(truth(corpus, *keys[key]))), key


def test_group_floors_from_the_stored_measurements(baseline):
    """Mean recall per language group must beat issue 3's baseline (whole-page rapidocr:
    0.97-0.98 English, 0.94-0.96 Chinese). Measured here (rapidocr 3.10, PP-OCRv6 small,
    200 DPI, after the review fixes of header/page-number handling): English 0.991, Chinese 0.980;
    floors = measured minus about 0.005."""
    pages = baseline["pages"]
    en = mean(pages[_key(*k)]["default"]["recall"] for k in ENGLISH_TEXT)
    zh = mean(pages[_key(*k)]["default"]["recall"] for k in CHINESE_TEXT)
    assert en >= 0.985, en
    assert zh >= 0.975, zh
