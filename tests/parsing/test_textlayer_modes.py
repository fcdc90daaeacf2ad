"""The ``--text-layer`` modes are declared once (:class:`ocrstack.parsing.options.TextLayerMode`):
the CLI and form strings stay ``auto`` / ``on`` / ``off``, options carry the plain string, and
no code compares a text-layer mode against a bare string literal (issue 20 item 6)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from PIL import Image

import ocrstack
from ocrstack.core.errors import UsageError
from ocrstack.parsing import options
from ocrstack.parsing.options import TextLayerMode
from ocrstack.parsing.textlayer.stage import read_page
from ocrstack.parsing.types import PageImage

PACKAGE = Path(ocrstack.__file__).parent
#: A text-layer mode (``text_layer`` or a ``mode`` in parsing/) compared with a string literal.
BARE = re.compile(r"""\b(?:text_layer|mode)\s*(?:==|!=)\s*["'](?:auto|on|off)["']""")


def test_modes_are_the_cli_strings() -> None:
    assert [m.value for m in TextLayerMode] == ["auto", "on", "off"]
    parser = argparse.ArgumentParser()
    options.add_arguments(parser)
    for m in TextLayerMode:
        value = parser.parse_args(["--text-layer", m.value]).text_layer
        assert value == m and type(value) is str  # a plain string reaches the cache key and blocks.json


def test_form_value_stays_a_plain_string() -> None:
    opts = options.from_mapping({"text_layer": "on"})
    assert opts.text_layer == TextLayerMode.ON and type(opts.text_layer) is str
    assert type(options.from_mapping({}).text_layer) is str  # the default too
    with pytest.raises(UsageError, match="one of: auto, on, off"):
        options.from_mapping({"text_layer": "always"})


def test_off_reads_no_layer_from_a_plain_string() -> None:
    page = PageImage("x.pdf", 0, Image.new("RGB", (10, 10), "white"), 72.0, "0")
    layer, verdict = read_page(page, "off")
    assert layer is None and not verdict.sound and verdict.reasons == ["--text-layer off"]


def test_no_bare_mode_strings_in_parsing() -> None:
    hits = [
        f"{p.relative_to(PACKAGE)}:{n}"
        for p in sorted((PACKAGE / "parsing").rglob("*.py"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if BARE.search(line)
    ]
    assert hits == [], f"compare against TextLayerMode, not a string: {hits}"
