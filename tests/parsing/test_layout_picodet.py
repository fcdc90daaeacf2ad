"""The PP-PicoDet post-processing of the layout model (ocrstack.parsing.layout.picodet): the same
boxes, scores and classes as rapid-layout's own ``PPPostProcess``, to the bit."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rapid_layout")
pytest.importorskip("cv2")

from ocrstack.parsing.layout import picodet
from ocrstack.parsing.layout.rapid import CONF_THRESH, IOU_THRESH, PP_INPUT_SIZE, bundled_model

LABELS = "text title figure figure_caption table table_caption header footer reference equation".split()


def _post():
    module = picodet.pp_module(bundled_model().parents[1], "post_process")
    return module.PPPostProcess(LABELS, CONF_THRESH, IOU_THRESH)


def _preds(seed: int, hot: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Model outputs of the shapes of the 800 x 608 input: per map (strides 8-64) class scores
    (1, points, 10), mostly under the threshold with ``hot`` points over it, and box bins
    (1, points, 32)."""
    rng = np.random.default_rng(seed)
    h, w = PP_INPUT_SIZE
    scores, dists = [], []
    for stride in (8, 16, 32, 64):
        n = int(np.ceil(h / stride) * np.ceil(w / stride))
        s = rng.uniform(0, 0.45, (1, n, len(LABELS))).astype(np.float32)
        for i in rng.choice(n, size=min(hot, n), replace=False):
            s[0, i, rng.integers(len(LABELS))] = rng.uniform(0.5, 1.0)
        scores.append(s)
        dists.append(rng.normal(0, 3, (1, n, 32)).astype(np.float32))
    return np.zeros((1, 3, h, w), np.float32), scores + dists


@pytest.mark.parametrize(("seed", "hot"), [(0, 0), (1, 3), (2, 40), (3, 400)])
def test_decode_gives_rapid_layouts_boxes_scores_and_classes_to_the_bit(seed, hot):
    post = _post()
    x, preds = _preds(seed, hot)
    ours = picodet.Decode(post)((1654, 2339), x, preds)
    theirs = post((1654, 2339), x, preds)
    assert ours == theirs
    assert len(ours[0]) > 0 or hot == 0


def test_decode_keeps_only_points_whose_best_score_passes_the_threshold():
    post = _post()
    x, preds = _preds(5, 7)
    boxes, scores = picodet.Decode(post).candidates(x, preds)
    assert len(boxes) == len(scores) == 28  # 7 hot points on each of the 4 maps
    assert (scores.max(axis=1) > CONF_THRESH).all()


@pytest.mark.corpus
def test_decode_matches_rapid_layout_on_model_outputs_of_corpus_pages(corpus):
    """On the layout model's own outputs for corpus pages (OpenVINO when installed)."""
    from ocrstack.parsing import documents
    from ocrstack.parsing.layout.rapid import RapidLayoutProvider

    provider = RapidLayoutProvider()
    handler = provider._engine
    post = handler.pp_postprocess.post
    for name in ("en_twocol_ltnews24.pdf", "math_zh_gaokao_exam.pdf", "tables_zh_debian_reference.pdf"):
        (page,) = documents.iter_pages(corpus / name, pages="1", dpi=200)
        img = np.ascontiguousarray(np.asarray(page.image)[:, :, ::-1])
        x = handler.pp_preprocess(img)
        preds = handler.session(x)
        ours, theirs = handler.pp_postprocess(img.shape[:2], x, preds), post(img.shape[:2], x, preds)
        assert ours == theirs and ours[0], name
