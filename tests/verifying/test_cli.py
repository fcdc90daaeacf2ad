"""``ocrstack verify`` through the CLI entry point: exit codes and what the user is told."""

from __future__ import annotations

import pytest

from ocrstack.cli import main
from ocrstack.core.errors import UsageError


def test_verify_without_arguments_exits_2_and_names_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["verify"])
    captured = capsys.readouterr()
    assert rc == UsageError.exit_code == 2
    assert captured.out == ""  # no report that could be read as a result
    for flag in ("--markdown", "--dspark-url", "--tiny", "--image", "--tf-model", "--server-url"):
        assert flag in captured.err


def test_verify_report_dir_alone_is_still_nothing_to_check(tmp_path) -> None:
    """`pixi run verify` passes only --report-dir: no report is written, exit 2."""
    assert main(["verify", "--report-dir", str(tmp_path / "rep")]) == 2
    assert not (tmp_path / "rep").exists()


def test_verify_markdown_reads_the_blocks_file_and_fails_a_plain_text_table(tmp_path, capsys) -> None:
    import json

    page = {
        "page": 1,
        "index": 0,
        "size": [600, 800],
        "structured": False,
        "error": None,
        "blocks": [
            {"order": 0, "category": "table", "bbox": [0, 0, 500, 300], "score": 0.9, "text": "a b\n1 2"}
        ],
    }
    (tmp_path / "t.blocks.json").write_text(
        json.dumps({"schema": 1, "recognizer": "rapidocr", "pages": [page]})
    )
    (tmp_path / "t.md").write_text("<!-- page 1 -->\n\na b\n1 2\n", encoding="utf-8")
    assert main(["verify", "--markdown", str(tmp_path / "t.md")]) == 1
    out = capsys.readouterr().out
    assert (
        "[   fail] output:table@1: page 1: 0 <table> (expected: t.blocks.json: layout found table blocks)"
        in out
    )
    assert main(["verify", "--markdown", str(tmp_path / "t.md"), "--no-blocks"]) == 0
    assert "[not-run] output:pages" in capsys.readouterr().out


@pytest.mark.slow
def test_real_parse_with_the_embedded_default_passes_the_table_check(corpus, tmp_path, capsys) -> None:
    """`ocrstack parse` (embedded default) on a real table page, then `verify --markdown`: the
    layout finds the tables and, since issue 11, the embedded default writes them as <table>
    (text layer + ruling lines here), so verify passes table@1. A plain-text table still fails it
    (test above)."""
    pdf = corpus / "tables_booktabs_ruled_vs_booktabs.pdf"
    if not pdf.is_file():
        pytest.skip(f"{pdf} not in the corpus")
    assert main(["parse", str(pdf), "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    rc = main(["verify", "--markdown", str(tmp_path / "tables_booktabs_ruled_vs_booktabs.md")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "[   pass] output:table@1" in out and "[   pass] output:text@1" in out
