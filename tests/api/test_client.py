"""``parse --api``: the client writes the same outputs as a local parse."""

from __future__ import annotations

import contextlib
import dataclasses
import io
from pathlib import Path

import pytest

from ocrstack.api.client import parse_via_api, request_fields
from ocrstack.api.process import ServiceProcess
from ocrstack.cli import main
from ocrstack.core.errors import InputError, ServerUnreachable, UsageError
from ocrstack.parsing.options import ParseOptions
from ocrstack.testing.fake_openai import FakeOpenAIServer


def test_only_changed_options_are_sent() -> None:
    opts = ParseOptions(inputs=(), dpi=150, keep_paratext=True, server_urls=("http://127.0.0.1:1",))
    assert request_fields(opts) == {
        "dpi": "150",
        "keep_paratext": "true",
        "server_urls": ["http://127.0.0.1:1"],
    }
    assert request_fields(ParseOptions(inputs=())) == {}


def test_unreachable_service_is_one_line(tmp_path: Path, tiny_png: Path) -> None:
    opts = ParseOptions(inputs=(tiny_png,), output=tmp_path / "out")
    with pytest.raises(ServerUnreachable, match="does not answer"):
        parse_via_api(opts, "http://127.0.0.1:9")


@pytest.mark.server
def test_same_outputs_as_a_local_parse(tmp_path: Path, tiny_pdf: Path, tiny_png: Path) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"not a pdf")
    with FakeOpenAIServer() as fake:
        flags = ["--recognizer", "openai", "--server-url", fake.url, "--layout", "none"]
        with ServiceProcess(tmp_path / "data", flags) as svc:
            opts = ParseOptions(
                inputs=(tiny_pdf, tiny_png),
                output=tmp_path / "api",
                layout="none",
                recognizer="openai",
                server_urls=(fake.url,),
            )
            written = parse_via_api(opts, svc.url, echo=lambda s: None)
            said: list[str] = []
            assert parse_via_api(opts, svc.url, echo=said.append) == []  # a rerun: up to date
            assert len(said) == 2 and all("up to date" in s for s in said)
            with pytest.raises(UsageError, match="other settings"):
                parse_via_api(dataclasses.replace(opts, dpi=150), svc.url, echo=lambda s: None)
            with pytest.raises(InputError, match="bad.pdf: .*not a PDF"):
                parse_via_api(ParseOptions(inputs=(bad,), output=tmp_path / "bad"), svc.url)
        local = tmp_path / "local"
        cli = ["parse", str(tiny_pdf), str(tiny_png), "-o", str(local), "--no-progress", *flags]
        with contextlib.redirect_stderr(io.StringIO()) as err:  # the CLI in this process: no new interpreter
            assert main(cli) == 0, err.getvalue()
    assert [p.name for p in written] == ["tiny report.md", "note.md"]
    for name in ("tiny report.md", "note.md"):
        assert (tmp_path / "api" / name).read_bytes() == (local / name).read_bytes()
    api_files = sorted(p.name for p in (tmp_path / "api").iterdir() if not p.name.startswith("."))
    local_files = sorted(p.name for p in local.iterdir() if not p.name.startswith("."))
    assert api_files == [f for f in local_files if f != "ocrstack-report.json"]  # batch report: local only


def test_parse_api_flag_goes_to_the_service(tmp_path: Path, tiny_png: Path, capsys) -> None:
    """`ocrstack parse --api URL` is the client (exit 5: nothing listens on port 9), not a local parse."""
    from ocrstack.cli import main

    out = tmp_path / "out"
    assert main(["parse", str(tiny_png), "-o", str(out), "--api", "http://127.0.0.1:9"]) == 5
    assert "does not answer" in capsys.readouterr().err
    assert not (out / f"{tiny_png.stem}.md").exists()
    assert main(["parse", str(tiny_png), "-o", str(out), "--api", "http://127.0.0.1:9", "--ray"]) == 2
