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
    assert "| tool | 3/4 | - | - | - | not run (no --math) | 2/2 | - | 3/4 |" in text
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


def test_the_table_lists_the_peers_of_issue_22() -> None:
    peers = {row: c.tool for row, c in olmocr_sample.CANDIDATES.items() if isinstance(c, olmocr_sample.Peer)}
    assert peers == {
        "pymupdf4llm": "pymupdf4llm",
        "rapidocr (whole page)": "rapidocr",
        "tesseract": "tesseract",
    }


def test_a_peer_reads_each_page_of_a_multipage_pdf_on_its_own(tmp_path: Path) -> None:
    """A peer gets one-page PDFs, so its pages are the sample's pages (mattsnotes has tests on
    pages 2 and 3); the split pages keep their text."""
    from ocrstack.bench.harness import make_pdf
    from ocrstack.parsing.textlayer.extract import page_text

    pdf = make_pdf(tmp_path / "three.pdf", pages=3, lines=2)
    pages = olmocr_sample._split(pdf, tmp_path / "pages")
    assert [p.name for p in pages] == ["three-p1.pdf", "three-p2.pdf", "three-p3.pdf"]
    text = "".join(c.text for c in page_text(pages[1], 0, (1700, 2200)).chars)
    assert "Page 2 line 1" in text and "Page 1" not in text


@pytest.mark.proc
def test_a_peer_that_is_not_installed_is_a_not_run_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tesseract off PATH: the peer's child fails with the reason, the row says it, nothing is dropped."""
    from ocrstack.bench.harness import make_pdf

    monkeypatch.setenv("PATH", str(tmp_path))  # the child runs by absolute path; no tesseract here
    pdf = make_pdf(tmp_path / "a.pdf", pages=1, lines=2)
    with pytest.raises(ConfigError, match="tesseract is not installed"):
        olmocr_sample.Peer("tesseract")([pdf], tmp_path / "w")


@pytest.mark.slow
def test_the_rapidocr_peer_gives_each_pages_text(tmp_path: Path) -> None:
    pytest.importorskip("rapidocr")
    from ocrstack.bench.harness import make_pdf

    pdf = make_pdf(tmp_path / "two.pdf", pages=2, lines=3)
    pages = olmocr_sample.Peer("rapidocr")([pdf], tmp_path / "w")[pdf]
    assert sorted(pages) == [1, 2]
    assert "Page 1 line 1" in pages[1] and "Page 2 line 3" in pages[2] and "Page 2" not in pages[1]


def test_system_chromium_takes_the_variable_then_the_known_names(tmp_path: Path, monkeypatch) -> None:
    from ocrstack.bench import olmocr_score

    exe = tmp_path / "my-chromium"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setattr(olmocr_score, "CHROMIUM", (str(tmp_path / "absent"), "no-such-browser-here"))
    monkeypatch.setenv("OCRSTACK_CHROMIUM", str(exe))
    assert olmocr_score.system_chromium() == str(exe)
    monkeypatch.delenv("OCRSTACK_CHROMIUM")
    assert olmocr_score.system_chromium() is None
    monkeypatch.setattr(olmocr_score, "CHROMIUM", (str(tmp_path / "absent"), str(exe)))
    assert olmocr_score.system_chromium() == str(exe)


def test_the_scorer_prints_only_its_json_on_stdout(monkeypatch, capsys) -> None:
    """olmocr prints as it scores (and its browser's clean-up at exit): the caller reads the JSON
    from stdout's last line, so everything else goes to stderr."""
    import sys

    from ocrstack.bench import olmocr_score

    def noisy(sample, candidates, math):
        print("Cleaning up <Playwright>")
        return {"tool": {"math": [1, 1]}}

    monkeypatch.setattr(olmocr_score, "score", noisy)
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # main points it at stderr: restored after
    assert olmocr_score.main(["sample", "candidates"]) == 0
    print("printed at exit")
    out, err = capsys.readouterr()
    assert out.splitlines() == ['{"tool": {"math": [1, 1]}}']
    assert "Cleaning up" in err and "printed at exit" in err


@pytest.mark.proc
def test_math_tests_render_in_a_system_chromium(tmp_path: Path) -> None:
    """The math column with a Chromium of the system given to Playwright (olmocr_score
    use_system_chromium): LaTeX the test names passes, the same formula as plain text does not."""
    from ocrstack.bench import olmocr_score

    python = _scorer_python()
    if olmocr_score.system_chromium() is None:
        pytest.skip("no system Chromium (Debian: apt-get install chromium) for the math tests")
    sample = tmp_path / "sample"
    (sample / "pdfs").mkdir(parents=True)
    from ocrstack.bench.harness import make_pdf

    make_pdf(sample / "pdfs" / "a.pdf", pages=1, lines=2)
    test = {"pdf": "a.pdf", "page": 1, "id": "m1", "type": "math", "math": "a^{2}+b^{2}=c^{2}"}
    (sample / "dataset.jsonl").write_text(json.dumps(test) + "\n")

    def latex(pdfs, work):
        return {p: {1: "Page 1 line 1\n\n$$a^{2}+b^{2}=c^{2}$$\n"} for p in pdfs}

    def plain(pdfs, work):
        return {p: {1: "Page 1 line 1\n\na2 + b2 = c2\n"} for p in pdfs}

    table = olmocr_sample.run_table(
        sample, tmp_path / "w", python, rows={"latex": latex, "plain": plain}, math=True
    )
    assert table.counts["latex"]["math"] == [1, 1] and table.counts["plain"]["math"] == [0, 1]
