"""guide 6 output checks on Markdown files."""

# ruff: noqa: E501 -- expectations and sample texts kept on one line
from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.core.errors import InputError, UsageError
from ocrstack.core.results import Status
from ocrstack.verifying.outputs import check_markdown, parse_expectation, split_pages

PROSE = "The quick brown fox jumps over the lazy dog while the parser reads every line of this page."


def _md(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "out.md"
    p.write_text(text, encoding="utf-8")
    return p


def _by(checks):
    return {c.name: c for c in checks}


def test_empty_output_fails(tmp_path: Path) -> None:
    c = _by(check_markdown(_md(tmp_path, "  \n<!-- page 1 -->\n\n")))
    assert c["output:non-empty"].status is Status.FAIL


def test_raw_otsl_fails(tmp_path: Path) -> None:
    c = _by(check_markdown(_md(tmp_path, PROSE + "\n<otsl><fcel>a<nl></otsl>\n")))
    assert c["output:no-otsl"].status is Status.FAIL and "1 raw <otsl>" in c["output:no-otsl"].detail


def test_page_expectations(tmp_path: Path) -> None:
    md = (
        "<!-- page 1 -->\n\n# Title\n\n" + PROSE + "\n\n"
        "<!-- page 2 -->\n\n<table><tr><td>a</td></tr></table>\n\n"
        "<!-- page 3 -->\n\nx = \\frac{a}{b}\n\n"
        "<!-- page 4 -->\n\nonly words no table here " + PROSE + "\n"
    )
    checks = check_markdown(
        _md(tmp_path, md),
        [
            parse_expectation("text@1"),
            parse_expectation("table@2,4"),
            parse_expectation("formula@3"),
            parse_expectation("formula@1"),
        ],
    )
    c = _by(checks)
    assert c["output:text@1"].status is Status.PASS
    assert c["output:table@2"].status is Status.PASS
    assert c["output:table@4"].status is Status.FAIL and "<table>" in c["output:table@4"].fix
    assert c["output:formula@3"].status is Status.PASS and "\\frac" in c["output:formula@3"].detail
    assert c["output:formula@1"].status is Status.FAIL
    assert c["output:no-otsl"].status is Status.PASS


def test_garbled_and_thinking_text_is_not_readable(tmp_path: Path) -> None:
    garbled = (
        "<!-- page 1 -->\n\n" + "]\ufffd\x11\ufffdd\ufffd\ufffd:\ufffdr\u026b\ufffd|cr4\ufffd\ufffdf" * 5
    )
    think = (
        "<!-- page 1 -->\n\n<think>\nThe user wants the text. Let me read the first line of it carefully.\n"
    )
    assert (
        _by(check_markdown(_md(tmp_path, garbled), [parse_expectation("text@1")]))["output:text@1"].status
        is Status.FAIL
    )
    c = _by(check_markdown(_md(tmp_path, think), [parse_expectation("text@1")]))["output:text@1"]
    assert c.status is Status.FAIL and "thinking" in c.detail


def test_chinese_text_is_readable(tmp_path: Path) -> None:
    zh = "<!-- page 1 -->\n\nSDK 负责版面检测、切块、拼接和并发调度，通过 HTTP 调用推理服务。SDK 和推理服务装在不同的 venv 里。\n"
    assert (
        _by(check_markdown(_md(tmp_path, zh), [parse_expectation("text@1")]))["output:text@1"].status
        is Status.PASS
    )


def test_page_expectation_without_markers_is_not_run(tmp_path: Path) -> None:
    c = _by(check_markdown(_md(tmp_path, PROSE), [parse_expectation("table@2"), parse_expectation("text")]))
    assert c["output:table@2"].status is Status.NOT_RUN
    assert c["output:text"].status is Status.PASS


def test_missing_page_fails(tmp_path: Path) -> None:
    c = _by(check_markdown(_md(tmp_path, "<!-- page 1 -->\n\n" + PROSE), [parse_expectation("table@7")]))
    assert c["output:table@7"].status is Status.FAIL


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        parse_expectation("chart@1")
    with pytest.raises(UsageError):
        parse_expectation("table@x")
    with pytest.raises(InputError):
        check_markdown(tmp_path / "nope.md")
    assert split_pages("no markers") == {}


def test_real_parser_output_if_present(corpus: Path) -> None:
    """The corpus' reference texts are readable text (sanity check of the heuristic on real documents)."""
    txt = sorted(corpus.glob("*.txt"))
    if not txt:
        pytest.skip("no .txt reference texts in the corpus")
    from ocrstack.verifying.config import load
    from ocrstack.verifying.outputs import readable

    ok, detail = readable(txt[0].read_text(encoding="utf-8")[:5000], load())
    assert ok, detail


# ---------------------------------------------------------------- expectations from NAME.blocks.json


def _blocks_json(
    tmp_path: Path, name: str, pages: list[tuple[list[tuple[str, str]], bool]], recognizer: str
) -> Path:
    """Write NAME.blocks.json the way `ocrstack parse` does (PageResult.to_json per page)."""
    import json

    from ocrstack.parsing.page_result import PageResult
    from ocrstack.parsing.types import Block, Category

    out = []
    for i, (blocks, structured) in enumerate(pages):
        bl = [
            Block((0, 40 * k, 500, 40 * k + 30), Category(cat), order=k, text=text)
            for k, (cat, text) in enumerate(blocks)
        ]
        out.append(PageResult(index=i, size=(600, 800), dpi=200, blocks=bl, structured=structured).to_json())
    doc = {"schema": 1, "complete": True, "layout": "rapid-layout", "recognizer": recognizer, "pages": out}
    path = tmp_path / f"{name}.blocks.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_blocks_json_beside_the_markdown_sets_the_page_checks_and_they_pass(tmp_path: Path) -> None:
    from ocrstack.verifying.options import VerifyOptions
    from ocrstack.verifying.run import run

    _blocks_json(
        tmp_path,
        "doc",
        [
            ([("title", "Results"), ("text", PROSE)], True),
            ([("table", "<table><tr><td>a</td></tr></table>")], True),
            ([("text", "Energy"), ("formula", "E = \\frac{m}{2}")], True),
        ],
        "openai",
    )
    md = _md(tmp_path, "")
    md = md.rename(tmp_path / "doc.md")
    md.write_text(
        "<!-- page 1 -->\n\n# Results\n\n" + PROSE + "\n\n"
        "<!-- page 2 -->\n\n<table><tr><td>a</td></tr></table>\n\n"
        "<!-- page 3 -->\n\nEnergy\n\n$$E = \\frac{m}{2}$$\n",
        encoding="utf-8",
    )
    res = run(VerifyOptions(markdown=md))
    c = _by(res.report.checks)
    assert (
        c["output:table@2"].status is Status.PASS
        and "doc.blocks.json: layout found table blocks" in c["output:table@2"].detail
    )
    assert c["output:formula@3"].status is Status.PASS
    assert c["output:text@1"].status is Status.PASS
    assert "output:text@3" not in c  # 6 letters of text on page 3: not a text page
    assert res.report.ok
    assert any(
        "doc.blocks.json (layout rapid-layout, recognizer openai): table on page(s) 2" in s
        for s in res.summary
    )


def test_plain_text_table_from_rapidocr_fails_the_table_check(tmp_path: Path) -> None:
    """rapidocr gives tables as plain text: the layout found a table, the Markdown has no <table> -> FAIL."""
    from ocrstack.verifying.options import VerifyOptions
    from ocrstack.verifying.run import run

    _blocks_json(
        tmp_path, "scan", [([("text", PROSE), ("table", "Name Qty\nbolt 4\nnut 8")], False)], "rapidocr"
    )
    md = tmp_path / "scan.md"
    md.write_text("<!-- page 1 -->\n\n" + PROSE + "\n\nName Qty\nbolt 4\nnut 8\n", encoding="utf-8")
    res = run(VerifyOptions(markdown=md))
    c = _by(res.report.checks)
    assert c["output:table@1"].status is Status.FAIL
    assert "recognizer 'rapidocr' returned plain text" in c["output:table@1"].fix
    assert not res.report.ok and "Output checks FAILED" in " ".join(res.summary)
    # --no-blocks: nothing says page 1 is a table page; the page checks are reported as not run
    res = run(VerifyOptions(markdown=md, use_blocks=False))
    c = _by(res.report.checks)
    assert "output:table@1" not in c and c["output:pages"].status is Status.NOT_RUN and res.report.ok


def test_expect_overrides_the_blocks_kind_and_adds_others(tmp_path: Path) -> None:
    from ocrstack.verifying.outputs import expectations_from_blocks, merge

    path = _blocks_json(
        tmp_path, "d", [([("table", "x")], True), ([("formula", "\\frac{1}{2}")], True)], "openai"
    )
    found = expectations_from_blocks(path)
    assert [(e.kind, e.pages) for e in found.expectations] == [("table", (1,)), ("formula", (2,))]
    merged = merge(found.expectations, [parse_expectation("table@2"), parse_expectation("text@1")])
    assert [(e.kind, e.pages, e.source) for e in merged] == [
        ("formula", (2,), "d.blocks.json: layout found formula blocks"),
        ("table", (2,), "--expect"),
        ("text", (1,), "--expect"),
    ]


def test_failed_pages_and_bad_blocks_files(tmp_path: Path) -> None:
    import json

    from ocrstack.verifying.options import VerifyOptions
    from ocrstack.verifying.outputs import expectations_from_blocks
    from ocrstack.verifying.run import run

    path = _blocks_json(tmp_path, "f", [([("table", "x")], True), ([("table", "y")], True)], "openai")
    doc = json.loads(path.read_text())
    doc["complete"] = False
    doc["pages"][1] = {**doc["pages"][1], "blocks": [], "error": "server unreachable"}
    path.write_text(json.dumps(doc))
    found = expectations_from_blocks(path)
    assert found.failed_pages == (2,) and [(e.kind, e.pages) for e in found.expectations] == [("table", (1,))]
    md = tmp_path / "f.md"
    md.write_text("<!-- page 1 -->\n\n<table><tr><td>x</td></tr></table>\n", encoding="utf-8")
    c = _by(run(VerifyOptions(markdown=md)).report.checks)
    assert (
        c["output:blocks-complete"].status is Status.WARN
        and "failed pages: 2" in c["output:blocks-complete"].detail
    )
    path.write_text("{not json")
    with pytest.raises(InputError, match="f.blocks.json: not a blocks file"):
        run(VerifyOptions(markdown=md))
    with pytest.raises(InputError, match="blocks file not found"):
        run(VerifyOptions(markdown=md, blocks=tmp_path / "other.blocks.json"))
