"""``--layout vlm``: the MinerU-Diffusion "Layout Detection:" answer parser (issue 14).

Answer strings follow the format of opendatalab/MinerU-Diffusion ``scripts/run_end2end.py``
(LAYOUT_RE at commit 8d456f1): ``<|box_start|>x0 y0 x1 y1<|box_end|><|ref_start|>label<|ref_end|>``
then a rotation tag, corners on a 0..1000 grid (MinerU 2.5 style zero-padded to 3 digits).
Expected values are worked out by hand in the comments.
"""

from __future__ import annotations

import json

import pytest
from PIL import Image

from ocrstack import cli
from ocrstack.core.errors import InputError, LayoutAnswerError
from ocrstack.parsing.layout import vlm_answer as va
from ocrstack.parsing.recognition.openai import prompts
from ocrstack.testing.fake_openai import FakeOpenAIServer, prompt_replay, request_prompt


def line(coords: str, label: str = "text", tail: str = "<|rotate_up|>") -> str:
    """One layout line in the repository's format."""
    return f"<|box_start|>{coords}<|box_end|><|ref_start|>{label}<|ref_end|>{tail}"


REAL = (
    "<|box_start|>088 049 913 087<|box_end|><|ref_start|>title<|ref_end|><|rotate_up|>\n"
    "<|box_start|>088 105 485 410<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"
    "<|box_start|>515 105 913 300<|box_end|><|ref_start|>table<|ref_end|><|rotate_up|>\n"
    "<|box_start|>515 320 913 360<|box_end|><|ref_start|>equation<|ref_end|><|rotate_up|>\n"
    "<|box_start|>020 400 060 900<|box_end|><|ref_start|>aside_text<|ref_end|><|rotate_left|>\n"
    "<|box_start|>480 950 520 970<|box_end|><|ref_start|>page_number<|ref_end|><|rotate_up|>"
    "<|im_end|>"
)


def test_real_answer_boxes_labels_angles_in_order():
    ans = va.parse_layout_answer(REAL)
    assert [b.label for b in ans.boxes] == ["title", "text", "table", "equation", "aside_text", "page_number"]
    assert ans.boxes[0].grid == (88, 49, 913, 87)  # "088" -> 88 (int)
    assert [b.angle for b in ans.boxes] == [0, 0, 0, 0, 270, 0]  # rotate_left = 270
    assert ans.problems == []


def test_page_pixels_use_the_0_1000_grid_over_width_and_height():
    box = va.parse_layout_answer(line("100 200 500 750", tail="")).boxes[0]
    # 1700 x 2200 page: x = v/1000*1700, y = v/1000*2200
    assert va.to_page_pixels(box, (1700, 2200)) == pytest.approx((170.0, 440.0, 850.0, 1650.0))


def test_swapped_corners_are_ordered_and_no_tag_means_no_rotation():
    ans = va.parse_layout_answer("<|box_start|>500 750 100 200<|box_end|><|ref_start|>Text<|ref_end|>")
    assert ans.boxes[0].grid == (100, 200, 500, 750)
    assert ans.boxes[0].label == "text"  # lower-cased as the repository does
    assert ans.boxes[0].angle is None


def test_each_rotation_tag():
    lines = "\n".join(
        f"<|box_start|>0 0 10 10<|box_end|><|ref_start|>text<|ref_end|>{tag}"
        for tag in ("<|rotate_up|>", "<|rotate_right|>", "<|rotate_down|>", "<|rotate_left|>")
    )
    assert [b.angle for b in va.parse_layout_answer(lines).boxes] == [0, 90, 180, 270]


def test_stop_strings_cut_the_answer():
    text = "<|box_start|>0 0 10 10<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|><|endoftext|>garbage"
    assert len(va.parse_layout_answer(text).boxes) == 1


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "no layout lines"),
        ("I cannot see a document.", "not a layout line"),
        # truncated mid-line (finish_reason=length): box_end and ref tags missing
        (REAL.split("<|im_end|>")[0] + "\n<|box_start|>100 980 400 99", "missing <|box_end|>"),
        # ragged list: three coordinates
        ("<|box_start|>100 200 300<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>", "3 coordinates"),
        # ref tags missing
        ("<|box_start|>100 200 300 400<|box_end|>text<|rotate_up|>", "missing <|ref_start|>, <|ref_end|>"),
        # outside the page: 1200 > 1000
        (line("100 200 1200 400"), "outside the page"),
        ("<|box_start|>100 200 100 400<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>", "zero-area"),
        ("<|box_start|>1 2 3 4<|box_end|><|ref_start|>text<|ref_end|><|rotate_sideways|>", "unexpected text"),
        ("<|box_start|>1.5 2 3 4<|box_end|><|ref_start|>text<|ref_end|>", "not non-negative integers"),
    ],
)
def test_malformed_answers_raise_a_per_page_error_with_remedy(answer, reason):
    with pytest.raises(LayoutAnswerError) as info:
        va.parse_layout_answer(answer, page="scan.pdf page 3")
    err = info.value
    assert reason in err.message
    assert err.message.startswith("scan.pdf page 3:")
    assert err.remedy and "mineru-diffusion" in err.remedy
    assert err.exit_code == 10  # its own code; in a run the page fails and the run exits 7


def test_lenient_mode_skips_bad_lines_like_the_repository():
    answer = (
        "<|box_start|>0 0 10 10<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"
        "<|box_start|>100 200 1200 400<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"
        "<|box_start|>5 5 5 9<|box_end|><|ref_start|>text<|ref_end|>\n"
        "<|box_start|>20 20 30"
    )
    ans = va.parse_layout_answer(answer, strict=False)
    assert [b.grid for b in ans.boxes] == [(0, 0, 10, 10)]
    assert [n for n, _ in ans.problems] == [2, 3, 4]


def test_layout_image_is_1036_square_rgb():
    img = va.prepare_layout_image(Image.new("L", (850, 1100), 255))
    assert img.size == (1036, 1036) and img.mode == "RGB"


def test_crop_rotates_counter_clockwise_with_expand():
    page = Image.new("RGB", (1000, 500), "white")
    page.paste((255, 0, 0), (0, 0, 100, 50))  # red square in the top-left of the block
    box = va.parse_layout_answer(line("0 0 400 200", tail="<|rotate_right|>")).boxes[0]
    crop = va.crop_block(page, box)
    # block = 400 x 100 px; rotate 90 CCW -> 100 x 400, the top-left corner goes to the bottom-left
    assert crop.size == (100, 400)
    assert crop.getpixel((5, 395)) == (255, 0, 0)
    assert crop.getpixel((95, 5)) == (255, 255, 255)


def test_crop_is_at_least_one_pixel():
    page = Image.new("RGB", (10, 10), "white")
    box = va.LayoutBox((999, 999, 1000, 1000), "text", None, 1)
    assert va.crop_block(page, box).size == (1, 1)


def test_mineru_prompt_set_carries_the_clients_diffusion_settings():
    ps = prompts.load("mineru-diffusion")
    # engines/sglang/__init__.py defaults: --block-size 32, --remask-strategy low_confidence_dynamic,
    # --dynamic-threshold 0.95; denoising_steps and block_length both take --block-size
    assert ps.request == {
        "extra_body": {
            "denoising_steps": 32,
            "block_length": 32,
            "denoising_strategy": "low_confidence_dynamic",
            "dynamic_threshold": 0.95,
        }
    }
    assert "8d456f1" in ps.request_source
    # run_end2end.py gen lengths: layout 2048, content 1024, table 2048, formula 1024
    assert {k: p.max_tokens for k, p in ps.prompts.items()} == {
        "text": 1024,
        "table": 2048,
        "formula": 1024,
        "layout": 2048,
    }
    assert ps.prompts["layout"].text == "\nLayout Detection:" and ps.prompts["layout"].verified


def test_request_fields_need_a_source(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("prompts:\n  text: {text: 'x', note: 'n'}\nrequest:\n  extra_body: {a: 1}\n")
    with pytest.raises(InputError, match="source"):
        prompts.load(str(f))


# ---------------------------------------------------------------- end to end (replaying server)

E2E_LAYOUT = (
    # 1000 x 1400 page: x = v/1000*1000, y = v/1000*1400
    "<|box_start|>100 050 900 100<|box_end|><|ref_start|>title<|ref_end|><|rotate_up|>\n"  # y 70..140
    "<|box_start|>100 120 900 300<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"  # y 168..420
    "<|box_start|>100 320 900 500<|box_end|><|ref_start|>table<|ref_end|><|rotate_up|>\n"  # y 448..700
    "<|box_start|>300 520 700 580<|box_end|><|ref_start|>equation<|ref_end|><|rotate_up|>\n"  # y 728..812
    "<|box_start|>920 300 980 900<|box_end|><|ref_start|>text<|ref_end|><|rotate_right|>\n"  # 60 x 840 px
    "<|box_start|>100 600 500 900<|box_end|><|ref_start|>image<|ref_end|><|rotate_up|>\n"
    "<|box_start|>480 960 520 980<|box_end|><|ref_start|>page_number<|ref_end|><|rotate_up|><|im_end|>"
)
E2E_ANSWERS = {
    "Text Recognition:": "Recorded paragraph text.",
    "Table Recognition:": "<fcel>Name<fcel>Value<nl><fcel>alpha<fcel>1<nl>",
    "Formula Recognition:": "E = mc^2",
}


def _page(tmp_path):
    img = Image.new("RGB", (1000, 1400), "white")
    img.paste((0, 0, 0), (100, 80, 300, 120))  # something dark in the title box
    path = tmp_path / "page.png"
    img.save(path)
    return path


def _parse(tmp_path, srv, *extra):
    out = tmp_path / "out"
    argv = ["parse", str(_page(tmp_path)), "-o", str(out), "--layout", "vlm", "--recognizer", "openai"]
    argv += ["--prompts", "mineru-diffusion", "--server-url", srv.url, "--model", "md", "--no-progress"]
    argv += list(extra)
    return cli.main(argv), out


def _chat(srv, prompt):
    return [r for r in srv.requests if request_prompt(r.body) == prompt]


@pytest.mark.server
def test_parse_end_to_end_against_a_replaying_server(tmp_path):
    answers = {"Layout Detection:": E2E_LAYOUT, **E2E_ANSWERS}
    with FakeOpenAIServer(model="md", reply=prompt_replay(answers)) as srv:
        rc, out = _parse(tmp_path, srv)
    assert rc == 0
    # one layout request per page: whole page at 1036 x 1036 with the set's diffusion settings
    (layout,) = _chat(srv, "Layout Detection:")
    assert layout.image_size == (1036, 1036)
    assert layout.body["max_tokens"] == 2048
    assert layout.body["extra_body"]["block_length"] == 32
    # block requests: title, text, rotated text -> Text; table; formula (image not sent, page
    # number skipped as paratext)
    texts = _chat(srv, "Text Recognition:")
    assert len(texts) == 3 and len(_chat(srv, "Table Recognition:")) == 1
    assert len(_chat(srv, "Formula Recognition:")) == 1
    assert all(r.body["extra_body"]["dynamic_threshold"] == 0.95 for r in texts)
    # rotate_right: the 60 x 840 block, padded 6 px (72 x 852), is turned 90 degrees -> 852 x 72
    assert (852, 72) in [r.image_size for r in texts]
    md = (out / "page.md").read_text(encoding="utf-8")
    assert "Recorded paragraph text." in md and "E = mc^2" in md
    assert "Name" in md and "alpha" in md and "<fcel>" not in md  # OTSL converted
    blocks = json.loads((out / "page.blocks.json").read_text(encoding="utf-8"))
    assert blocks["layout"] == "vlm"
    page = blocks["pages"][0]
    assert page["error"] is None
    by_label = {}
    for b in page["blocks"]:
        by_label.setdefault(b["label"], []).append(b)
    # table box 100 320 900 500 -> (100, 448, 900, 700) page pixels, padded 6 px for the crop
    assert by_label["table"][0]["bbox"] == [94.0, 442.0, 906.0, 706.0]
    assert by_label["table"][0]["category"] == "table"
    assert by_label["equation"][0]["category"] == "formula"
    assert by_label["image"][0]["category"] == "figure"
    assert [b.get("rotation", 0) for b in by_label["text"]] == [0, 90]
    assert [b["order"] for b in page["blocks"]] == sorted(b["order"] for b in page["blocks"])


@pytest.mark.server
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (E2E_LAYOUT.split("\n<|box_start|>920")[0] + "\n<|box_start|>920 300 98", "missing <|box_end|>"),
        ("The page shows a table.", "not a layout line"),
        (E2E_LAYOUT.replace("920 300 980 900", "920 300 1980 900"), "outside the page"),
    ],
)
def test_broken_layout_answer_fails_the_page_not_the_run(tmp_path, answer, reason):
    replay = prompt_replay({"Layout Detection:": answer, **E2E_ANSWERS})
    with FakeOpenAIServer(model="md", reply=replay) as srv:
        rc, out = _parse(tmp_path, srv)
    assert rc == 7  # partial success: the page failed, nothing crashed
    page = json.loads((out / "page.blocks.json").read_text(encoding="utf-8"))["pages"][0]
    assert reason in page["error"] and "page.png page 1" in page["error"]
    assert _chat(srv, "Text Recognition:") == []  # no block request for an unreadable layout


@pytest.mark.server
def test_layout_cut_at_max_tokens_is_a_page_error(tmp_path):
    replay = prompt_replay({"Layout Detection:": E2E_LAYOUT, **E2E_ANSWERS})
    with FakeOpenAIServer(model="md", reply=replay, finish_reason="length") as srv:
        rc, out = _parse(tmp_path, srv)
    assert rc == 7
    page = json.loads((out / "page.blocks.json").read_text(encoding="utf-8"))["pages"][0]
    assert "cut at max_tokens=2048" in page["error"]


@pytest.mark.server
def test_prompt_set_without_layout_prompt_is_a_usage_error(tmp_path):
    with FakeOpenAIServer(model="md") as srv:
        rc, _ = _parse(tmp_path, srv, "--prompts", "minicpm-ocr")
    assert rc == 2


def test_resize_by_need_as_the_repository():
    from ocrstack.parsing.crops import resize_by_need

    # 1000 x 10: ratio 100 > 50 -> white canvas 1000 x 20 (ceil 1000/50), then 20 < 28: x1.4 -> 1400 x 28
    thin = Image.new("RGB", (1000, 10), (0, 0, 0))
    out = resize_by_need(thin)
    assert out.size == (1400, 28)
    assert out.getpixel((700, 1)) == (255, 255, 255)  # padding above the centred strip stays white
    # 20 x 100: ratio 5, short edge 20 -> scale 1.4 -> 28 x 140
    assert resize_by_need(Image.new("RGB", (20, 100))).size == (28, 140)
    plain = Image.new("RGB", (300, 200))
    assert resize_by_need(plain) is plain


def test_mineru_set_fits_crops():
    ps = prompts.load("mineru-diffusion")
    # run_end2end.py MIN_IMAGE_EDGE, MAX_IMAGE_EDGE_RATIO
    assert ps.crop == {"min_edge": 28, "max_edge_ratio": 50}
    assert prompts.load("minicpm-ocr").crop == {}
