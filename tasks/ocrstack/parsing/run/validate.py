"""Post-write checks of a parse result (guide 6: check the output, not only the exit status).

Each check names the page and block it is about. The Markdown is read back from disk, so
what is checked is what was written.
"""

from __future__ import annotations

import re
from pathlib import Path

from ocrstack.core.pages import split_pages
from ocrstack.core.results import Check, Report, Status
from ocrstack.parsing.assembly.markdown import has_escaped_otsl, has_otsl
from ocrstack.parsing.page_result import PageResult, skipped
from ocrstack.parsing.types import Category

_TABLE = re.compile(r"<table\b", re.IGNORECASE)


def strip_comments(text: str) -> str:
    """``text`` without its HTML comments (``<!--`` through the first ``-->`` after it; an
    unclosed one is kept). A loop of ``str.find``: the lazy ``<!--.*?-->`` it replaces scanned to the
    end of the text from every unclosed ``<!--``, O(n^2) (the hardening issue, item 1)."""
    out, pos = [], 0
    while (start := text.find("<!--", pos)) >= 0 and (end := text.find("-->", start + 4)) >= 0:
        out.append(text[pos:start])
        pos = end + 3
    out.append(text[pos:])
    return "".join(out)


def validate(markdown_path: Path, pages: list[PageResult]) -> Report:
    """Check the written Markdown against the page results.

    Checks (guide 6):
      * ``non-empty``: the Markdown holds text besides page markers and comments (fail), unless
        no page has a layout block (a blank document: valid input, valid empty output);
      * ``pages``: every selected page was parsed (fail per failed page);
      * ``no-raw-otsl``: no OTSL token (``<otsl>``, ``<fcel>``, ``<nl>`` ..., raw or
        escaped as text) is left (fail, with the page and the block whose text carried it);
      * ``tables``: each page has as many ``<table>`` as non-empty table blocks the layout
        found; fail for a structured recognizer, warn for plain OCR (rapidocr fallback);
      * ``empty-blocks``: blocks with no text (warn, with page and block).
    """
    report = Report(f"validate {markdown_path.name}")
    text = markdown_path.read_text(encoding="utf-8") if markdown_path.is_file() else ""
    body = strip_comments(text).strip()
    blank = not body and all(not p.error and not p.blocks for p in pages)
    if body or blank:
        # a blank page is valid input with valid, empty output (no layout block, nothing to read)
        seen = f"{len(body)} characters of content" if body else "blank: no layout block on any page"
        report.add(Check("non-empty", Status.PASS, seen))
    else:
        report.add(
            Check(
                "non-empty",
                Status.FAIL,
                f"{markdown_path} has no content",
                fix="look at NAME.blocks.json: which pages have blocks and text",
            )
        )
    failed = [p for p in pages if p.error]
    for p in failed:
        report.add(
            Check("pages", Status.FAIL, f"page {p.index + 1}: {p.error}", fix="rerun to retry failed pages")
        )
    if not failed:
        report.add(Check("pages", Status.PASS, f"{len(pages)} page(s) parsed"))
    by_page = split_pages(text)
    raw = []
    for p in pages:
        md = strip_comments(by_page.get(p.index + 1, ""))
        if has_otsl(md) or has_escaped_otsl(md):
            blocks = [f"block {b.order} ({b.category.value})" for b in p.blocks if has_otsl(b.text)]
            raw.append(f"page {p.index + 1}: {', '.join(blocks) or 'unknown block'}")
    report.add(
        Check(
            "no-raw-otsl",
            Status.FAIL if raw else Status.PASS,
            "; ".join(raw) if raw else "no OTSL tokens left",
            fix="OTSL outside a table block is not converted; check the layout category of those blocks",
        )
    )
    missing, fallback = [], []
    for p in pages:
        tables = [b for b in p.blocks if b.category is Category.TABLE and b.text.strip()]
        found = len(_TABLE.findall(by_page.get(p.index + 1, "")))
        if len(tables) > found:
            where = f"page {p.index + 1}: {len(tables)} table block(s) "
            where += f"({', '.join(str(b.order) for b in tables)}), {found} <table>"
            (missing if p.structured else fallback).append(where)
    if missing:
        report.add(
            Check(
                "tables",
                Status.FAIL,
                "; ".join(missing),
                fix="the recognizer did not return OTSL/HTML for these tables; check the table prompt",
            )
        )
    elif fallback:
        report.add(
            Check(
                "tables",
                Status.WARN,
                "; ".join(fallback) + " (kept as OCR text)",
                fix="use --recognizer openai with an OTSL-capable model for HTML tables",
            )
        )
    else:
        report.add(Check("tables", Status.PASS, "every table block is a <table>"))
    empty = [
        f"page {p.index + 1} block {b.order} ({b.category.value})"
        for p in pages
        for b in p.blocks
        if not b.text.strip() and b.category is not Category.FIGURE and not skipped(b)
    ]
    report.add(
        Check(
            "empty-blocks",
            Status.WARN if empty else Status.PASS,
            "; ".join(empty) if empty else "every block has text",
            fix="look at the overlay (--save-layout-images); empty blocks are marked in the Markdown",
        )
    )
    return report
