"""guide 6 output checks on Markdown files."""

# ruff: noqa: E501 -- expectations and sample texts kept on one line
from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.errors import InputError, UsageError
from ocrstack.results import Status
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
    checks = check_markdown(_md(tmp_path, md), [parse_expectation("text@1"), parse_expectation("table@2,4"),
                                                   parse_expectation("formula@3"), parse_expectation("formula@1")])
    c = _by(checks)
    assert c["output:text@1"].status is Status.PASS
    assert c["output:table@2"].status is Status.PASS
    assert c["output:table@4"].status is Status.FAIL and "<table>" in c["output:table@4"].fix
    assert c["output:formula@3"].status is Status.PASS and "\\frac" in c["output:formula@3"].detail
    assert c["output:formula@1"].status is Status.FAIL
    assert c["output:no-otsl"].status is Status.PASS


def test_garbled_and_thinking_text_is_not_readable(tmp_path: Path) -> None:
    garbled = "<!-- page 1 -->\n\n" + "]\ufffd\x11\ufffdd\ufffd\ufffd:\ufffdr\u026b\ufffd|cr4\ufffd\ufffdf" * 5
    think = "<!-- page 1 -->\n\n<think>\nThe user wants the text. Let me read the first line of it carefully.\n"
    assert _by(check_markdown(_md(tmp_path, garbled), [parse_expectation("text@1")]))["output:text@1"].status is Status.FAIL
    c = _by(check_markdown(_md(tmp_path, think), [parse_expectation("text@1")]))["output:text@1"]
    assert c.status is Status.FAIL and "thinking" in c.detail


def test_chinese_text_is_readable(tmp_path: Path) -> None:
    zh = "<!-- page 1 -->\n\nSDK 负责版面检测、切块、拼接和并发调度，通过 HTTP 调用推理服务。SDK 和推理服务装在不同的 venv 里。\n"
    assert _by(check_markdown(_md(tmp_path, zh), [parse_expectation("text@1")]))["output:text@1"].status is Status.PASS


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
