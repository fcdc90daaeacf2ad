"""``--text-layer`` through ``ocrstack parse`` (issue 11 items 1 and 5): the option is declared
once (CLI flag, HTTP form field, cache key in blocks.json), each page records its verdict and
each block its source, broken layers fall back to OCR with the reason in blocks.json, and the
corpus tables come out as ``<table>`` in the embedded default."""

from __future__ import annotations

import json
from pathlib import Path

import pikepdf
import pytest

from ocrstack.cli import main
from ocrstack.core.errors import UsageError
from ocrstack.parsing import options as parse_options
from ocrstack.parsing.tables.born_digital import html_cells
from support import parse_helpers


def _parse(pdf: Path, out: Path, *extra: str) -> dict:
    rc = main(["parse", str(pdf), "-o", str(out), "--no-progress", *extra])
    assert rc == 0
    return json.loads((out / f"{pdf.stem}.blocks.json").read_text(encoding="utf-8"))


def test_option_is_declared_once_for_cli_api_and_cache_key():
    assert parse_options.from_mapping({"text_layer": "off"}).text_layer == "off"
    assert parse_options.ParseOptions(inputs=()).text_layer == "auto"
    with pytest.raises(UsageError, match="--text-layer"):
        parse_options.from_mapping({"text_layer": "sometimes"})


def test_the_accuracy_suite_measures_the_ocr_path():
    assert parse_helpers.parser("none").options.text_layer == "off"


@pytest.mark.corpus
def test_auto_takes_a_sound_page_from_the_layer_and_records_it(corpus, tmp_path):
    doc = _parse(corpus / "tables_googledocs_grid.pdf", tmp_path / "auto")
    assert doc["settings"]["text_layer"] == "auto"
    page = doc["pages"][0]
    assert page["text_layer"]["sound"] is True and page["text_layer"]["reasons"] == []
    assert "textlayer" in page["timings"]
    sources = {b["category"]: b["source"] for b in page["blocks"]}
    assert sources["text"] == "text-layer" and sources["table"] == "text-layer"
    assert sources["figure"] == "ocr"  # the picture of a snake: no layer text, read by OCR
    table = next(b["text"] for b in page["blocks"] if b["category"] == "table")
    rows = html_cells(table)
    assert [t for t, _, _ in rows[2]] == ["Capital", "Jakarta", "Berlin", "Vienna", "Paris", "Vatican City"]
    md = (tmp_path / "auto" / "tables_googledocs_grid.md").read_text(encoding="utf-8")
    assert "<table>" in md and "<td>Jakarta</td>" in md


@pytest.mark.corpus
def test_off_reads_every_block_by_ocr(corpus, tmp_path):
    doc = _parse(corpus / "en_single_libtasn1_intro.pdf", tmp_path / "off", "--text-layer", "off")
    page = doc["pages"][0]
    assert page["text_layer"] == {"sound": False, "reasons": ["--text-layer off"], "counts": {}}
    assert {b["source"] for b in page["blocks"]} == {"ocr"}


@pytest.mark.corpus
def test_a_broken_layer_falls_back_to_ocr_with_the_reason(corpus, tmp_path):
    pdf = tmp_path / "pua.pdf"
    with pikepdf.open(corpus / "en_single_libtasn1_intro.pdf") as doc:
        cmap = b"".join(f"<{c:02X}> <{0xE000 + c:04X}>\n".encode() for c in range(0x20, 0x7F))
        data = (
            b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
            b"/CMapName /Broken def 1 begincodespacerange <00> <FF> endcodespacerange\n"
            b"95 beginbfchar\n"
            + cmap
            + b"endbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end\n"
        )
        for font in doc.pages[0].Resources.Font.values():
            font.ToUnicode = pikepdf.Stream(doc, data)
        doc.save(pdf)
    out = _parse(pdf, tmp_path / "out")
    page = out["pages"][0]
    assert page["text_layer"]["sound"] is False
    assert "private-use" in page["text_layer"]["reasons"][0]
    assert {b["source"] for b in page["blocks"]} == {"ocr"}
    md = (tmp_path / "out" / "pua.md").read_text(encoding="utf-8")
    assert "libtasn1" in md.lower() and "\ue000" not in md


def test_the_http_api_takes_the_option_as_a_form_field():
    from ocrstack.api import options as api_options

    base = parse_options.ParseOptions(inputs=())
    opts = api_options.from_form({"text_layer": "off"}, base=base, allowed_server_urls=())
    assert opts.text_layer == "off"
    with pytest.raises(UsageError, match="--text-layer"):
        api_options.from_form({"text_layer": "maybe"}, base=base, allowed_server_urls=())
