"""``ocrstack parse`` command line: option building, relative paths, exit codes, end to end."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from ocrstack import cli
from ocrstack.commands import parse as parse_cmd
from ocrstack.core.errors import ServerRejected, ServerUnreachable
from ocrstack.core.results import Check, Report, Status
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run import pipeline
from ocrstack.parsing.run.outcomes import DocumentSummary, RunSummary
from ocrstack.parsing.stages import Parser


def _args(*argv: str) -> argparse.Namespace:
    return cli.build_parser().parse_args(["parse", *argv])


def test_defaults_come_from_parse_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OCR_LAYOUT_MODEL_DIR", raising=False)
    opts = parse_cmd.options_from_args(_args("a.pdf"))
    d = ParseOptions(inputs=())
    assert (opts.dpi, opts.layout, opts.recognizer, opts.model, opts.prompts) == (
        d.dpi,
        d.layout,
        d.recognizer,
        d.model,
        d.prompts,
    )
    assert opts.server_urls == d.server_urls and opts.layout_model is None


def test_relative_paths_resolve_against_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.yaml").write_text("x: 1\n")
    opts = parse_cmd.options_from_args(
        _args("docs/a.pdf", "-o", "out", "--layout-model", "models/pp", "--prompts", "p.yaml")
    )
    assert opts.inputs == (tmp_path / "docs" / "a.pdf",)
    assert opts.output == tmp_path / "out" and opts.layout_model == tmp_path / "models" / "pp"
    assert opts.prompts == str(tmp_path / "p.yaml")


def test_layout_model_env_and_flag_precedence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OCR_LAYOUT_MODEL_DIR", "/models/from-env")
    assert parse_cmd.options_from_args(_args("a.pdf")).layout_model == Path("/models/from-env")
    assert parse_cmd.options_from_args(_args("a.pdf", "--layout-model", "/x")).layout_model == Path("/x")


def test_all_flags(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    opts = parse_cmd.options_from_args(
        _args(
            "a.pdf", "b.png", "--pages", "1-3,7", "--dpi", "150", "--layout", "none",
            "--recognizer", "openai",
            "--server-url", "http://127.0.0.1:1", "--server-url", "http://127.0.0.1:2", "--model", "m",
            "--prompts", "mineru-diffusion", "--concurrency", "2", "--limit", "1", "--password", "pw",
            "--force", "--keep-paratext", "--save-layout-images", "--api-key", "sk-x", "--max-tokens", "99",
            "--timeout", "5", "--retries", "0", "--max-pixels", "1000000",
        )
    )  # fmt: skip
    assert opts.pages == "1-3,7" and opts.dpi == 150 and opts.layout == "none" and opts.recognizer == "openai"
    assert opts.server_urls == ("http://127.0.0.1:1", "http://127.0.0.1:2") and opts.model == "m"
    assert opts.prompts == "mineru-diffusion" and opts.concurrency == 2 and opts.limit == 1
    assert opts.password == "pw" and opts.force and opts.keep_paratext and opts.save_layout_images
    assert (opts.max_tokens, opts.request_timeout, opts.retries) == (99, 5.0, 0)
    assert opts.max_pixels == 1_000_000
    assert opts.api_key == "sk-x" and "sk-x" not in repr(opts)


def test_missing_input_is_bad_input_exit_3(tmp_path, capsys):
    rc = cli.main(["parse", str(tmp_path / "nope.pdf"), "-o", str(tmp_path / "out"), "--no-progress"])
    assert rc == 3
    err = capsys.readouterr().err
    assert "nope.pdf" in err and err.count("\n") == 1


def test_unknown_layout_and_bad_pages_are_usage_errors(tmp_path, capsys):
    img = tmp_path / "a.png"
    Image.new("RGB", (50, 40), "white").save(img)
    out = str(tmp_path / "out")
    assert cli.main(["parse", str(img), "-o", out, "--layout", "bogus", "--no-progress"]) == 2
    assert "rapid-layout, pp-doclayout-v3, paddlex, none" in capsys.readouterr().err
    assert cli.main(["parse", str(img), "-o", out, "--pages", "3-1", "--no-progress"]) == 2
    assert cli.main(["parse", str(img), "-o", out, "--concurrency", "0", "--no-progress"]) == 2
    assert cli.main(["parse", str(img), "-o", out, "--retries", "-1", "--no-progress"]) == 2
    assert cli.main(["parse", str(img), "-o", out, "--timeout", "0", "--no-progress"]) == 2


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ServerUnreachable("http://127.0.0.1:18499 unreachable", "curl /v1/models"), 5),
        (ServerRejected("400", "add --trust-request-mm-kwargs", status=400), 6),
    ],
)
def test_server_errors_map_to_their_exit_codes(tmp_path, monkeypatch, exc, code):
    def boom(*a, **k):
        raise exc

    monkeypatch.setattr(pipeline, "run", boom)
    assert cli.main(["parse", str(tmp_path / "a.pdf"), "--no-progress"]) == code


@pytest.mark.parametrize(
    ("outcome", "code", "says"),
    [
        ({"pages": 2}, 0, "2 page(s), 0 from cache, 0 failed"),
        ({"pages": 2, "failed": 1}, 7, "ocrstack: error: 1 page(s) failed; the rest was written"),
        ({"pages": 2, "partial": 1}, 7, "0 page(s) failed, 1 page(s) with failed blocks; the rest"),
        ({"pages": 2, "validation": Report("v", [Check("tables", Status.FAIL)])}, 1, "validation failed"),
    ],
)
def test_the_returned_outcome_is_printed_and_maps_to_the_exit_code(
    tmp_path, monkeypatch, capsys, outcome, code, says
):
    """pipeline.run returns its outcome; the verb prints its lines and ends with its exit code."""
    doc = DocumentSummary(source=tmp_path / "a.pdf", markdown=tmp_path / "a.md", seconds=1.0, **outcome)
    monkeypatch.setattr(pipeline, "run", lambda *a, **k: RunSummary([doc], single=True))
    assert cli.main(["parse", str(tmp_path / "a.pdf"), "--no-progress"]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"{tmp_path / 'a.md'}: 2 page(s)") and says in err, err


@pytest.mark.slow
@pytest.mark.corpus
def test_readme_command_end_to_end_with_relative_paths(corpus, tmp_path, monkeypatch, capsys):
    """The main job on a real corpus PDF, paths relative to the cwd as in the README."""
    work = tmp_path / "work"
    (work / "docs").mkdir(parents=True)
    shutil.copy(corpus / "en_single_libtasn1_intro.pdf", work / "docs" / "intro.pdf")
    monkeypatch.chdir(work)
    assert cli.main(["parse", "docs/intro.pdf", "-o", "out/", "--no-progress"]) == 0
    md = (work / "out" / "intro.md").read_text()
    assert "Libtasn1 library" in md and "ASN.1" in md
    data = json.loads((work / "out" / "intro.blocks.json").read_text())
    assert data["complete"] and data["layout"] == "rapid-layout" and data["recognizer"] == "rapidocr"
    assert data["pages"][0]["blocks"] and data["validation"]["ok"]
    # the same command again: up to date, skipped (issue 10: rerun = resume, like make)
    capsys.readouterr()
    assert cli.main(["parse", "docs/intro.pdf", "-o", "out/", "--no-progress"]) == 0
    assert "up to date" in capsys.readouterr().err
    # other settings: refused without --force, output untouched
    assert cli.main(["parse", "docs/intro.pdf", "-o", "out/", "--dpi", "150", "--no-progress"]) == 2
    assert "--force" in capsys.readouterr().err and (work / "out" / "intro.md").read_text() == md
    # --force: page comes from the resume cache
    assert cli.main(["parse", "docs/intro.pdf", "-o", "out/", "--force", "--no-progress"]) == 0
    assert "1 from cache" in capsys.readouterr().err
    assert (work / "out" / "intro.md").read_text() == md


@pytest.mark.proc
def test_installed_cli_exit_code_for_bad_input(tmp_path, cli_env):
    exe = Path(sys.executable).parent / "ocrstack"
    proc = subprocess.run(
        [str(exe), "parse", str(tmp_path / "missing.pdf"), "-o", str(tmp_path / "o")],
        capture_output=True, text=True, env=cli_env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 3 and "missing.pdf" in proc.stderr


def _bad_images(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A good PNG, a truncated one (its header reads, its pixels do not) and a 300x300 one."""
    good = tmp_path / "good.png"
    Image.new("RGB", (120, 90), "white").save(good)
    big = tmp_path / "big.png"
    Image.new("RGB", (300, 300), "white").save(big)
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(big.read_bytes()[:60])
    return good, truncated, big


def _fake_parser(monkeypatch) -> None:
    from tests.parsing.run.test_batch import FakeLayout, FakeRecognizer

    def fake_parser(options: ParseOptions) -> Parser:
        return Parser(options, layout=FakeLayout(), recognizer=FakeRecognizer())

    monkeypatch.setattr(pipeline, "Parser", fake_parser)


def test_an_input_that_cannot_be_decoded_is_one_line_with_no_progress_bar(tmp_path, monkeypatch, capsys):
    """The bar is on (no --no-progress), but the run stops before its first page is under way:
    stderr is the one error line, not an empty bar above it. A good input does draw the bar."""
    _fake_parser(monkeypatch)
    good, truncated, big = _bad_images(tmp_path)
    out = str(tmp_path / "out")
    for argv, says in (
        ([str(truncated)], "truncated.png: cannot be decoded"),
        ([str(big), "--max-pixels", "1000"], "big.png: image of 300x300 = 90000 pixels exceeds"),
    ):
        assert cli.main(["parse", *argv, "-o", out]) == 3, argv
        err = capsys.readouterr().err
        assert err.startswith(f"ocrstack: error: {tmp_path}/{says}") and err.count("\n") == 1, err
        assert "page/s" not in err and "\r" not in err and "|" not in err, err
    assert cli.main(["parse", str(good), "-o", out]) == 0
    err = capsys.readouterr().err
    assert "1/1 [" in err and "page/s" in err, err  # the bar, once a page is under way


@pytest.mark.proc
def test_installed_cli_prints_no_bar_before_a_decode_error(tmp_path, cli_env):
    """The same through the real command and its engines, as a user runs it."""
    _, truncated, _ = _bad_images(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "ocrstack", "parse", str(truncated), "-o", str(tmp_path / "o")],
        capture_output=True, text=True, env=cli_env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("ocrstack: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "truncated.png: cannot be decoded" in proc.stderr and "page/s" not in proc.stderr


def test_bad_output_path_and_limit_zero_are_one_line_usage_errors(tmp_path, capsys):
    img = tmp_path / "a.png"
    Image.new("RGB", (50, 40), "white").save(img)
    afile = tmp_path / "afile"
    afile.touch()
    for argv in (["-o", str(afile)], ["-o", "/proc/nope"], ["--limit", "0", "-o", str(tmp_path / "o")]):
        assert cli.main(["parse", str(img), *argv, "--no-progress"]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert ("--limit" in err) if "--limit" in argv else (argv[1] in err), err
    assert not (tmp_path / "o" / "a.md").exists()


def test_cli_and_mapping_refuse_a_bad_value_with_the_same_message(tmp_path, capsys):
    """One declaration, one validation: ``--concurrency 0`` on the command line and
    ``{"concurrency": "0"}`` from a form give the same one-line message and fix."""
    from ocrstack.core.errors import UsageError
    from ocrstack.parsing.options import from_mapping

    img = tmp_path / "a.png"
    Image.new("RGB", (50, 40), "white").save(img)
    for flag, field, value in (
        ("--concurrency", "concurrency", "0"),
        ("--dpi", "dpi", "x"),
        ("--timeout", "request_timeout", "-1"),
    ):
        assert cli.main(["parse", str(img), flag, value, "-o", str(tmp_path / "o"), "--no-progress"]) == 2
        err = capsys.readouterr().err
        with pytest.raises(UsageError) as mapped:
            from_mapping({field: value})
        assert err.strip() == f"ocrstack: error: {mapped.value}", err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.parametrize("text_layer", ["auto", "off"])
def test_a_blank_pdf_page_parses_to_empty_markdown_with_exit_0(tmp_path, capsys, text_layer):
    """A blank page is valid input with valid, empty output, in both modes (issue 22 item 6: it
    exited 1 with "output validation failed: no content"); embedded default, real models."""
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument.new()
    doc.new_page(595, 842)  # A4 in points, nothing on it
    pdf = tmp_path / "blank.pdf"
    doc.save(str(pdf))
    doc.close()
    out = tmp_path / "out"
    rc = cli.main(["parse", str(pdf), "-o", str(out), "--text-layer", text_layer, "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    assert (out / "blank.md").read_text(encoding="utf-8").strip() == "<!-- page 1 -->"
    blocks = json.loads((out / "blank.blocks.json").read_text(encoding="utf-8"))
    assert blocks["complete"] and blocks["pages"][0]["blocks"] == []
