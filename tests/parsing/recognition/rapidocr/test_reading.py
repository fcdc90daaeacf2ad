"""Detection size from text height and the session options of the embedded OCR path (issue 11)."""

from __future__ import annotations

import pytest

from ocrstack.parsing.recognition.rapidocr import reading as E


def test_probe_scale_is_the_probe_side_over_the_long_side_never_above_one():
    assert E.detection_scale((1700, 2200), None) == pytest.approx(E.PROBE_SIDE / 2200)
    assert E.detection_scale((600, 400), None) == 1.0


def test_tall_enough_text_keeps_the_probe_scale():
    probe = E.PROBE_SIDE / 2200
    assert E.detection_scale((1700, 2200), [20.0, 22.0, 18.0]) == pytest.approx(probe)


def test_a_probe_that_finds_nothing_is_followed_by_a_full_size_pass():
    assert E.detection_scale((1700, 2200), []) == 1.0
    assert E.detection_scale((3000, 8000), []) == pytest.approx(4000 / 8000)


def test_small_text_on_a_large_page_is_detected_larger_up_to_full_resolution():
    # A3 at 200 DPI: 2339 x 3308; median line 10 px at the probe scale
    probe = E.PROBE_SIDE / 3308
    assert E.detection_scale((2339, 3308), [10.0, 10.0, 11.0]) == pytest.approx(probe * 20 / 10)
    # tiny text: capped at the page's own pixels
    assert E.detection_scale((2339, 3308), [2.0, 2.0]) == 1.0


def test_max_side_bounds_the_second_pass():
    assert E.detection_scale((3000, 8000), [1.0]) == pytest.approx(4000 / 8000)


def test_session_options_one_thread_no_spinning():
    pytest.importorskip("onnxruntime")
    opts = E.session_options()
    assert opts.intra_op_num_threads == E.INTRA_OP_THREADS == 1
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert opts.enable_cpu_mem_arena


def test_each_stage_loads_on_first_use_once_on_our_session():
    """Issue 21: a born-digital page asks only the recognizer (the OCR sample), so building the
    engine loads no model; a stage loads when first asked, once, on :func:`session_options`."""
    pytest.importorskip("rapidocr")
    from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer

    engine = RapidOcrRecognizer().engine()
    assert (engine.text_det, engine.text_cls, engine.text_rec) == (None, None, None)
    rec = E.stage_model(engine, "rec")
    assert E.stage_model(engine, "rec") is rec and engine.text_rec is rec
    assert (engine.text_det, engine.text_cls) == (None, None)
    options = rec.session.session.get_session_options()  # ours, not rapidocr's all-core session
    assert options.intra_op_num_threads == E.INTRA_OP_THREADS
    det = engine._load_det_model()  # what rapidocr's own methods call: the same wrapped loader
    assert engine.text_det is det and det.session.session.get_session_options().intra_op_num_threads == 1


def test_load_loads_every_stage_up_front():
    """``load()`` (a warm process: the bench's warm runs) loads what a run loads on first use."""
    pytest.importorskip("rapidocr")
    from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer

    r = RapidOcrRecognizer()
    assert r._engine is None
    r.load()
    engine = r._engine
    assert engine is not None and None not in (engine.text_det, engine.text_cls, engine.text_rec)


def test_small_text_page_gets_a_second_detection_pass_and_is_read():
    """A page of 8 px text drawn at 3300 px high: the probe (max side PROBE_SIDE)
    finds no line at all, so the page is detected again larger and the words are read."""
    pytest.importorskip("rapidocr")
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer

    img = Image.new("RGB", (2340, 3300), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=8)
    for k in range(40):
        draw.text((150, 150 + 70 * k), f"line {k} of small text on a large page", fill="black", font=font)
    rec = RapidOcrRecognizer()
    bgr = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    raw = E.read_raw(rec.engine(), bgr)
    assert raw.det_passes == 2
    assert raw.det_scale > E.PROBE_SIDE / 3300
    text = " ".join(t for t, s in zip(raw.texts, raw.scores, strict=True) if s >= 0.5)
    assert "small text on a large page" in text


def test_batches_in_two_streams_are_rapidocrs_batches_and_answers_return_to_their_crops(monkeypatch):
    import numpy as np

    class FakeRec:
        rec_batch_num = 3

        def __init__(self):
            self.batches = []

        def __call__(self, inp):
            self.batches.append(sorted(c.shape[1] for c in inp.img))

            class Out:
                txts = tuple(f"w{c.shape[1]}" for c in inp.img)
                scores = tuple(0.5 + c.shape[1] / 1000 for c in inp.img)

            return Out()

    pytest.importorskip("rapidocr")
    monkeypatch.setattr(E, "REC_STREAMS", 2)
    widths = [90, 30, 60, 150, 120, 10, 40]
    crops = [np.zeros((10, w, 3), np.uint8) for w in widths]
    rec = FakeRec()
    texts, scores = E.recognize(rec, crops)
    assert texts == [f"w{w}" for w in widths]
    assert scores == [0.5 + w / 1000 for w in widths]
    assert sorted(rec.batches) == [[10, 30, 40], [60, 90, 120], [150]]  # sorted runs of rec_batch_num


def _crop_with_text(size: tuple[int, int], text: str, font_px: int):
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", size, "white")
    ImageDraw.Draw(img).text((10, 10), text, fill="black", font=ImageFont.load_default(size=font_px))
    return img


def test_a_block_crop_is_detected_at_its_own_pixels_not_scaled_up_to_736(monkeypatch):
    """A 300 x 60 px header crop: rapidocr's preprocessing would feed the detector 3680 x 736
    px; the region read feeds it the crop rounded to multiples of 32, and reads the words."""
    pytest.importorskip("rapidocr")
    import numpy as np

    from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer

    rec = RapidOcrRecognizer()
    det = E.stage_model(rec.engine(), "det")
    shapes = []
    run = det.session.__call__

    def spy(x):
        shapes.append(x.shape[2:])
        return run(x)

    monkeypatch.setattr(det, "session", spy)
    lines = rec.read_region(_crop_with_text((300, 60), "Annual report", 24))
    assert shapes == [(64, 288)]  # 60 x 300 to the nearest multiples of 32 (DetPreProcess.resize)
    assert "Annual report" in " ".join(ln.text for ln in lines)
    shapes.clear()
    bgr = np.ascontiguousarray(np.asarray(_crop_with_text((300, 60), "Annual report", 24))[:, :, ::-1])
    E.detect(rec.engine(), bgr)  # a whole image keeps rapidocr's scale-up of a short side to 736
    assert min(shapes[0]) >= 736


def test_a_crop_whose_boxes_are_low_is_detected_again_larger(monkeypatch):
    import numpy as np

    low = np.array([[0, 0], [100, 0], [100, 8], [0, 8]], dtype=np.float32)  # 8 px high box
    scales = []

    def fake_detect(det, bgr, scale, native=False):
        scales.append((scale, native))
        return [low / 1.0]

    monkeypatch.setattr(E, "_detect", fake_detect)

    class Engine:
        def _load_det_model(self):
            return None

    boxes, scale, passes = E.detect_region(Engine(), np.zeros((40, 400, 3), np.uint8))
    assert passes == 2 and scale == pytest.approx(E.TARGET_TEXT_PX / 8)
    assert scales == [(1.0, True), (pytest.approx(E.TARGET_TEXT_PX / 8), True)]


def test_a_crop_the_native_pass_reads_nothing_on_is_read_the_old_way(monkeypatch):
    """6 px text on a 400 x 40 crop: no box at its own pixels; rapidocr's scale-up (crop on a
    white 736 px canvas) still reads it."""
    pytest.importorskip("rapidocr")
    from PIL import Image

    from ocrstack.parsing.recognition.rapidocr.recognizer import DET_MIN_SIDE, RapidOcrRecognizer

    rec = RapidOcrRecognizer()
    calls = []
    real = rec.read_lines

    def read_lines(image, region=False):
        calls.append((image.size, region))
        return real(image, region=region)

    monkeypatch.setattr(rec, "read_lines", read_lines)
    lines = rec.read_region(_crop_with_text((400, 40), "small print here", 6))
    assert calls == [((400, 40), True), ((DET_MIN_SIDE, DET_MIN_SIDE), False)]
    assert "print" in " ".join(ln.text for ln in lines)
    calls.clear()
    assert rec.read_region(Image.new("RGB", (200, 80), "white")) == []  # no text: both passes
    assert calls == [((200, 80), True), ((DET_MIN_SIDE, DET_MIN_SIDE), False)]
