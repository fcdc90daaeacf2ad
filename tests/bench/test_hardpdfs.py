"""The hard-PDF batch (issue 22): manifest, download check, word counts, outcomes, and one real
batch over two PDFs made here (one sound, one damaged) through the real CLI child processes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ocrstack.bench import hardpdfs
from ocrstack.bench.harness import make_pdf
from ocrstack.bench.pagewords import markdown_words, pdfium_words
from ocrstack.core.errors import StepFailed


def test_manifest_names_at_least_30_files_with_provenance() -> None:
    entries = hardpdfs.manifest()
    assert len(entries) >= 30
    assert len({e["file"] for e in entries}) == len(entries)
    for e in entries:
        assert e["repo"] in {"mozilla/pdf.js", "pdfminer/pdfminer.six", "py-pdf/pypdf"}
        assert len(e["commit"]) == 40 and len(e["sha256"]) == 64 and e["licence"]
        assert "olmocr" not in e["path"].lower()


def test_fetch_writes_checked_files_and_refuses_a_wrong_sha(tmp_path: Path, monkeypatch) -> None:
    data = b"%PDF-1.4 fake"
    entry = {"file": "x.pdf", "repo": "o/r", "commit": "c" * 40, "path": "p/x.pdf"}
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    monkeypatch.setattr(hardpdfs, "manifest", lambda: [entry])
    urls = []
    assert hardpdfs.fetch(tmp_path, get=lambda url: urls.append(url) or data) == ["x.pdf"]
    assert urls == [f"https://raw.githubusercontent.com/o/r/{'c' * 40}/p/x.pdf"]
    assert (tmp_path / "x.pdf").read_bytes() == data
    assert hardpdfs.fetch(tmp_path, get=lambda url: pytest.fail("no download when present")) == []
    (tmp_path / "x.pdf").write_bytes(b"changed")
    with pytest.raises(StepFailed, match="sha256"):
        hardpdfs.fetch(tmp_path, get=lambda url: b"other bytes")
    assert (tmp_path / "x.pdf").read_bytes() == b"changed"


def test_markdown_words_per_page_ignores_comments_tags_and_markup() -> None:
    md = (
        "<!-- page 1 -->\n## Title here\n\n<!-- empty text block -->\n<table><tr><td>a b</td></tr></table>\n"
        "<!-- page 2 -->\n\n<!-- page 3 -->\n| x | y |\n|---|---|\n"
    )
    assert markdown_words(md) == {0: 4, 1: 0, 2: 2}
    assert markdown_words("no page markers here") == {0: 4}


@pytest.mark.parametrize(
    ("rc", "stderr", "ref", "words", "outcome"),
    [
        (0, "", [5, 3], {0: 4, 1: 2}, "ok"),
        (0, "", [5, 0], {0: 4}, "ok"),
        (0, "", [5, 3], {0: 4, 1: 0}, "EMPTIED p2"),
        (7, "doc.pdf: partial (1 failed block)", [5], {0: 4}, "partial: doc.pdf: partial (1 failed block)"),
        (
            3,
            "x\ndoc.pdf: cannot open -- fix: check it",
            [],
            {},
            "failed: doc.pdf: cannot open -- fix: check it",
        ),
        (None, "", [5], {}, "timeout"),
        (-11, "", [5], {}, "crash: exit -11: (no message)"),
        (
            1,
            "Traceback (most recent call last):\nValueError: boom",
            [5],
            {},
            "crash: exit 1: ValueError: boom",
        ),
    ],
)
def test_outcome_classifies_each_end(rc, stderr, ref, words, outcome) -> None:
    got, _ = hardpdfs._outcome(rc, stderr, ref, words)
    assert got == outcome
    row = hardpdfs.FileResult("f.pdf", 1, 1, None, 1, 0.1, got)
    assert row.bad == (outcome.split(":")[0].split(" ")[0] in {"crash", "timeout", "EMPTIED"})


@pytest.mark.proc
def test_timeout_kills_the_child(tmp_path: Path) -> None:
    import sys

    rc, _, _ = hardpdfs._run_bounded([sys.executable, "-c", "import time; time.sleep(60)"], timeout=1)
    assert rc is None


def test_pdfium_reference_counts_words(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "a.pdf", pages=2, lines=3)
    assert pdfium_words(pdf) == [42, 42]  # 3 lines of 14 words per page


@pytest.mark.slow
def test_batch_runs_the_cli_on_a_sound_and_a_damaged_pdf(tmp_path: Path) -> None:
    pytest.importorskip("rapidocr")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    make_pdf(corpus / "sound.pdf", pages=1, lines=3)
    (corpus / "damaged.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ntrailer\n%%EOF\n")
    batch = hardpdfs.run_batch(corpus, tmp_path / "out", timeout=300)
    rows = {r.file: r for r in batch.rows}
    assert rows["sound.pdf"].outcome == "ok", rows["sound.pdf"]
    assert rows["sound.pdf"].pdfium == 42 and rows["sound.pdf"].ocrstack >= 40
    assert rows["damaged.pdf"].outcome.startswith("failed: "), rows["damaged.pdf"]
    assert not batch.bad
    table = batch.to_text()
    assert "| sound.pdf | 1 | 42 |" in table and "2 files: 1 ok, 1 failed with a reason" in table
    assert json.loads(batch.to_json())["bad"] == 0
