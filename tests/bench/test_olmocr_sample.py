"""The olmOCR sample table (issue 22): page splitting, the candidate folder layout, the table, and
the package's scorer on a hand-made sample (skipped without an interpreter that has olmocr)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ocrstack.bench import olmocr_sample
from ocrstack.core.errors import ConfigError


def test_split_pages_at_markers() -> None:
    md = "<!-- page 1 -->\nfirst\n\n<!-- page 2 -->\n\n<!-- page 3 -->\nthird\n"
    assert olmocr_sample.split_pages(md) == {1: "first\n", 2: "\n", 3: "third\n"}
    assert olmocr_sample.split_pages("no marker") == {1: "no marker"}


def test_table_marks_math_not_run_and_lists_failed_rows() -> None:
    table = olmocr_sample.SampleTable(
        counts={"tool": {"present": [3, 4], "baseline": [2, 2], "dataset": [3, 4]}},
        not_run={"peer": "no module"},
    )
    text = table.to_text()
    assert "| tool | 3/4 | - | - | - | not run (no browser) | 2/2 | - | 3/4 |" in text
    assert "| peer | not run: no module |" in text
    assert json.loads(table.to_json())["not_run"] == {"peer": "no module"}


def test_a_missing_sample_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no olmOCR sample"):
        olmocr_sample.run_table(tmp_path, tmp_path / "w", "python")


def _scorer_python() -> str:
    python = os.environ.get("OCRSTACK_OLMOCR_PYTHON", "")
    if not python or not Path(python).is_file():
        pytest.skip(
            "set OCRSTACK_OLMOCR_PYTHON to a Python with envs/olmocr.txt installed (nox -s olmocr makes one)"
        )
    return python


@pytest.mark.proc
def test_candidates_scored_by_the_olmocr_package(tmp_path: Path) -> None:
    python = _scorer_python()
    sample = tmp_path / "sample"
    (sample / "pdfs" / "sub").mkdir(parents=True)
    from ocrstack.bench.harness import make_pdf

    make_pdf(sample / "pdfs" / "a.pdf", pages=1, lines=2)
    make_pdf(sample / "pdfs" / "sub" / "b.pdf", pages=1, lines=2)
    tests = [
        {"pdf": "a.pdf", "page": 1, "id": "a1", "type": "present", "text": "quick brown fox"},
        {"pdf": "a.pdf", "page": 1, "id": "a2", "type": "absent", "text": "Page 1 line 1"},
        {"pdf": "sub/b.pdf", "page": 1, "id": "b1", "type": "present", "text": "lazy dog"},
    ]
    (sample / "dataset.jsonl").write_text("\n".join(json.dumps(t) for t in tests) + "\n")

    def good(pdfs, work):
        return {p: {1: "the quick brown fox jumps over the lazy dog"} for p in pdfs}

    def bad(pdfs, work):
        return {p: {1: "Page 1 line 1: nothing else"} for p in pdfs}

    def absent(pdfs, work):
        raise ImportError("no module named peer")

    table = olmocr_sample.run_table(
        sample, tmp_path / "w", python, rows={"good": good, "bad": bad, "peer": absent}
    )
    assert table.counts["good"]["present"] == [2, 2] and table.counts["good"]["absent"] == [1, 1]
    assert table.counts["good"]["baseline"] == [2, 2] and table.counts["good"]["dataset"] == [3, 3]
    assert table.counts["bad"]["present"] == [0, 2] and table.counts["bad"]["absent"] == [0, 1]
    assert table.not_run == {"peer": "no module named peer"}
    assert (tmp_path / "w" / "candidates" / "good" / "sub" / "b_pg1_repeat1.md").is_file()
