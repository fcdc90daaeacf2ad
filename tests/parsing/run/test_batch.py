"""Batches (issue 10): per-document outcomes, the report, rerun = resume, --pages per file.

Fake layout/recognizer on generated TIFFs (no OCR): the batch logic is what is tested here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ocrstack import cli
from ocrstack.core.errors import InputError, PartialSuccess, UsageError
from ocrstack.parsing.engines import LayoutProvider, Recognizer
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import outcomes, pipeline
from ocrstack.parsing.run.outcomes import RunSummary, Status
from ocrstack.parsing.stages import Parser
from ocrstack.parsing.types import Block, Category, PageImage
from support.inputs import multipage_tiff


class FakeLayout(LayoutProvider):
    name = "fake-layout"
    gives_order = False

    def detect(self, page: PageImage) -> list[Block]:
        w, h = page.size
        return [Block((0, 0, w, h), Category.TEXT, 0.9, 0, "text")]


class FakeRecognizer(Recognizer):
    name = "fake-ocr"
    structured = False

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def recognize(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        self.calls.append((Path(page.source).name, page.index))
        for b in blocks:
            b.text = f"words of {Path(page.source).stem} page {page.index + 1}"
        return blocks


def _parser(options: ParseOptions, recognizer: Recognizer | None = None) -> Parser:
    return Parser(options, layout=FakeLayout(), recognizer=recognizer or FakeRecognizer())


def _run(options: ParseOptions, lines: list[str] | None = None, parser: Parser | None = None):
    """Run with fake engines; ``lines`` receives what ``ocrstack parse`` prints (waits, outcome)."""
    parser = parser or _parser(options)
    say = lines.append if lines is not None else (lambda _s: None)
    summary = pipeline.run(options, progress=False, echo=say, parser=parser)
    if lines is not None:
        lines.extend(summary.lines())
    return summary, parser


def _partial(summary: RunSummary, match: str) -> PartialSuccess:
    """The run's error for the exit code: a PartialSuccess (exit 7) whose message has ``match``."""
    err = summary.error()
    assert isinstance(err, PartialSuccess) and match in err.message, err
    return err


def _b_fails_on(tmp_path: Path, pages: tuple[int, ...]) -> tuple[ParseOptions, Parser]:
    """A batch of docs/a.tif (1 page) and docs/b.tif (2 pages) whose recognizer raises on
    ``pages`` (0-based) of b.tif; output in tmp_path/out."""
    docs = tmp_path / "docs"
    docs.mkdir()
    multipage_tiff(docs / "a.tif", 1)
    multipage_tiff(docs / "b.tif", 2)

    class FailsB(FakeRecognizer):
        def recognize(self, page, blocks):
            if Path(page.source).name == "b.tif" and page.index in pages:
                raise RuntimeError("cannot read this page")
            return super().recognize(page, blocks)

    options = ParseOptions(inputs=(docs,), output=tmp_path / "out")
    return options, _parser(options, FailsB())


def _bad_batch(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    multipage_tiff(docs / "a.tif", 2)
    multipage_tiff(docs / "e.tif", 2)
    (docs / "b.pdf").write_bytes(b"")  # empty
    (docs / "c.pdf").write_text("just some notes, renamed\n")  # a text file renamed .pdf
    multipage_tiff(docs / "d.tif", 1)  # too short for --pages 2
    return docs


def test_rerun_of_an_interrupted_batch_resumes_and_reports_up_to_date(tmp_path: Path):
    """Problem 1: the first file finished, the second did not -> the same command again exits 0,
    the first is reported up to date (nothing parsed), the second is parsed."""
    docs = tmp_path / "docs"
    docs.mkdir()
    multipage_tiff(docs / "a.tif", 2)
    multipage_tiff(docs / "b.tif", 3)  # other bytes than a.tif (equal files share their cached pages)
    options = ParseOptions(inputs=(docs,), output=tmp_path / "out")
    _run(options)
    out = tmp_path / "out"
    a_md = (out / "a.md").read_text()
    (out / "b.md").unlink()  # as if the run had been stopped while b was in flight
    (out / "b.blocks.json").unlink()
    lines: list[str] = []
    summary, parser = _run(options, lines)
    a, b = summary.documents
    assert a.up_to_date and a.status == "ok" and not b.up_to_date and b.status == "ok"
    assert parser.recognizer.calls == [] and b.cached == 3  # b's finished pages: from the page cache
    assert any("a.md: up to date" in s for s in lines), lines
    assert (out / "a.md").read_text() == a_md and (out / "b.md").is_file()
    report = json.loads((out / "ocrstack-report.json").read_text())
    assert report["summary"] == {"ok": 2, "partial": 0, "failed": 0, "up_to_date": 1}


def test_a_batch_goes_on_past_bad_documents_and_names_each(tmp_path: Path):
    """Problems 2 and 5: empty b.pdf, a text file renamed c.pdf and a 1-page d.tif with --pages 2
    each get their own line (path + fix); a.tif and e.tif are written; summary and report."""
    docs = _bad_batch(tmp_path)
    out = tmp_path / "out"
    lines: list[str] = []
    summary, _ = _run(ParseOptions(inputs=(docs,), output=out, pages="2"), lines)
    err = _partial(summary, "2 ok, 0 partial, 3 failed")
    assert err.exit_code == 7 and "rerun the same command" in err.remedy
    assert "words of a page 2" in (out / "a.md").read_text() and (out / "e.md").is_file()
    failed = [s for s in lines if s.startswith("FAILED ")]
    for name in ("b.pdf", "c.pdf", "d.tif"):
        (line,) = [s for s in failed if str(docs / name) in s]
        assert "-- fix:" in line, line
    (d_line,) = [s for s in failed if "d.tif" in s]
    assert "beyond the last page (1)" in d_line
    assert any(s.startswith("ocrstack parse: 2 ok, 0 partial, 3 failed") for s in lines), lines
    report = json.loads((out / outcomes.REPORT_NAME).read_text())
    assert report["summary"] == {"ok": 2, "partial": 0, "failed": 3, "up_to_date": 0}
    status = {Path(d["source"]).name: (d["status"], d["error"]) for d in report["documents"]}
    assert [n for n, (s, _) in status.items() if s == "ok"] == ["a.tif", "e.tif"]
    assert status["b.pdf"][0] == "failed" and "empty" in status["b.pdf"][1]
    assert not list(out.glob("ocrstack-report.json.*"))  # atomic write left no temporary file


def test_the_report_names_no_markdown_for_a_document_that_failed_as_a_whole(tmp_path: Path):
    """A document that failed before anything was written (empty, not a PDF, --pages beyond its
    end, a NAME.md it must not replace) has ``markdown: null``; the one path listed exists."""
    docs = _bad_batch(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "e.md").write_text("my own notes\n")  # not an ocrstack output: e.tif fails, e.md stays
    summary, _ = _run(ParseOptions(inputs=(docs,), output=out, pages="2"))
    _partial(summary, "1 ok, 0 partial, 4 failed")
    report = json.loads((out / outcomes.REPORT_NAME).read_text())
    markdown = {Path(d["source"]).name: d["markdown"] for d in report["documents"]}
    failed = dict.fromkeys(("b.pdf", "c.pdf", "d.tif", "e.tif"))
    assert markdown == {"a.tif": str(out / "a.md"), **failed}
    assert (out / "a.md").is_file() and not (out / "b.md").exists()
    assert (out / "e.md").read_text() == "my own notes\n"


def test_a_document_whose_every_page_failed_keeps_its_written_markdown(tmp_path: Path):
    """Every page failed: status failed, but NAME.md was written (pages marked failed), so the
    report's path is that existing file."""
    options, parser = _b_fails_on(tmp_path, pages=(0, 1))
    summary, _ = _run(options, parser=parser)
    _partial(summary, "1 ok, 0 partial, 1 failed")
    report = json.loads((tmp_path / "out" / outcomes.REPORT_NAME).read_text())
    b = next(d for d in report["documents"] if Path(d["source"]).name == "b.tif")
    assert b["status"] == "failed" and b["failed_pages"] == 2
    assert b["markdown"] == str(tmp_path / "out" / "b.md") and Path(b["markdown"]).is_file()


def test_the_bad_batch_exits_7_on_the_command_line(tmp_path: Path, monkeypatch, capsys):
    docs = _bad_batch(tmp_path)

    monkeypatch.setattr(pipeline, "Parser", _parser)
    argv = ["parse", str(docs), "-o", str(tmp_path / "out"), "--pages", "2", "--no-progress"]
    assert cli.main(argv) == 7
    err = capsys.readouterr().err
    assert "2 ok, 0 partial, 3 failed" in err and err.count("FAILED ") == 3, err
    # rerun: good documents up to date, the same three named again
    assert cli.main(argv) == 7
    err = capsys.readouterr().err
    assert "2 ok (2 up to date), 0 partial, 3 failed" in err, err


def test_partial_document_in_a_batch_is_partial(tmp_path: Path):
    options, parser = _b_fails_on(tmp_path, pages=(1,))
    docs = tmp_path / "docs"
    lines: list[str] = []
    summary, _ = _run(options, lines, parser)
    assert summary.status == Status.PARTIAL
    _partial(summary, "1 ok, 1 partial, 0 failed")
    assert any(s.startswith(f"PARTIAL {docs / 'b.tif'}: 1 of 2 page(s) failed") for s in lines), lines


def test_one_input_keeps_its_own_exit_codes(tmp_path: Path):
    """A single document fails as before: its own error class (exit 3 for a bad file, 2 for
    --pages beyond its end) -- and the --pages message names the file (problem 5)."""
    empty = tmp_path / "b.pdf"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="b.pdf"):
        _run(ParseOptions(inputs=(empty,), output=tmp_path / "out"))
    two = multipage_tiff(tmp_path / "two.tif", 2)
    with pytest.raises(UsageError) as err:
        _run(ParseOptions(inputs=(two,), output=tmp_path / "out", pages="99"))
    assert err.value.exit_code == 2
    assert str(err.value).startswith(f"{two}: page 99") and "beyond the last page (2)" in str(err.value)


def test_an_output_from_another_input_fails_only_that_document(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    multipage_tiff(docs / "a.tif", 1)
    multipage_tiff(docs / "b.tif", 1)
    options = ParseOptions(inputs=(docs,), output=tmp_path / "out")
    _run(options)
    multipage_tiff(docs / "a.tif", 2)  # a changed since its output was made
    lines: list[str] = []
    summary, _ = _run(options, lines)
    _partial(summary, "1 ok")
    assert any("a.md already exists, made from another input" in s and "--force" in s for s in lines)
    summary, parser = _run(dataclasses.replace(options, force=True))
    assert [d.status for d in summary.documents] == ["ok", "ok"]


def test_a_run_killed_between_writing_md_and_blocks_json_resumes(tmp_path: Path, monkeypatch):
    """SIGKILL after NAME.md is written and before its blocks.json: the rerun resumes (from the
    page cache) instead of refusing NAME.md as an output "made from another input"."""
    from ocrstack.parsing import outputs

    doc = multipage_tiff(tmp_path / "doc.tif", 2)
    options = ParseOptions(inputs=(doc,), output=tmp_path / "out")
    real = outputs.atomic_write_json

    def killed(path, data):
        if path.name == "doc.blocks.json" and (tmp_path / "out" / "doc.md").exists():
            raise SystemExit("killed")  # the process dies here
        return real(path, data)

    monkeypatch.setattr(outputs, "atomic_write_json", killed)
    with pytest.raises(SystemExit):
        _run(options)
    monkeypatch.setattr(outputs, "atomic_write_json", real)
    summary, parser = _run(options)
    (d,) = summary.documents
    assert d.status == "ok" and not d.up_to_date and d.cached == 2 and parser.recognizer.calls == []
    assert json.loads((tmp_path / "out" / "doc.blocks.json").read_text())["complete"] is True


def test_a_fatal_server_error_stops_the_batch_and_the_report_says_so(tmp_path: Path):
    """A 4xx (guide 8) is not one document's problem: the batch stops, the documents done so far
    are in the report, with ``stopped`` naming why."""
    from ocrstack.core.errors import ServerRejected

    docs = tmp_path / "docs"
    docs.mkdir()
    multipage_tiff(docs / "a.tif", 1)
    multipage_tiff(docs / "b.tif", 2)  # other bytes than a.tif (equal files share their cached pages)

    class RejectsB(FakeRecognizer):
        def recognize(self, page, blocks):
            if Path(page.source).name == "b.tif":
                raise ServerRejected("400 Bad Request", "add --trust-request-mm-kwargs", status=400)
            return super().recognize(page, blocks)

    options = ParseOptions(inputs=(docs,), output=tmp_path / "out")
    parser = _parser(options, RejectsB())
    with pytest.raises(ServerRejected):
        pipeline.run(options, progress=False, echo=lambda _s: None, parser=parser)
    report = json.loads((tmp_path / "out" / outcomes.REPORT_NAME).read_text())
    assert report["stopped"] == "ServerRejected"
    assert [(Path(d["source"]).name, d["status"]) for d in report["documents"]] == [("a.tif", "ok")]
