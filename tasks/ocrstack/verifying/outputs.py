"""Output checks on a parsed Markdown file (guide 6).

* non-empty (``assert md.strip()``),
* no ``<otsl>`` left (tables must be converted to HTML),
* ``<table>`` on the pages expected to hold tables,
* LaTeX (e.g. ``\\frac``) on the pages expected to hold formulas,
* readable text on text pages: mostly letters/digits/punctuation, few U+FFFD, no ``<think>``
  (guide 8: empty or garbled output = thinking mode left on).

Pages are split on the ``<!-- page N -->`` markers ``ocrstack parse`` writes; expectations
for specific pages are not-run when the file has no markers.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ocrstack.errors import InputError, UsageError
from ocrstack.results import Check, Status
from ocrstack.verifying.config import VerifyConfig, load

PAGE_MARKER = re.compile(r"^<!-- page (\d+) -->\s*$", re.M)
COMMENT = re.compile(r"<!--.*?-->", re.S)
TAG = re.compile(r"<[^>]+>")
KINDS = ("table", "formula", "text")


@dataclass(frozen=True)
class Expectation:
    """``kind`` (table|formula|text) expected on ``pages`` (1-based; empty = anywhere in the file)."""

    kind: str
    pages: tuple[int, ...] = ()


def parse_expectation(spec: str) -> Expectation:
    """Parse ``KIND`` or ``KIND@P1,P2`` (e.g. ``table@2,5``).

    Raises:
        UsageError: unknown kind or bad page list.
    """
    kind, _, pages = spec.partition("@")
    if kind not in KINDS:
        raise UsageError(
            f"--expect {spec!r}: unknown kind '{kind}'", f"use one of {', '.join(KINDS)}, e.g. table@2"
        )
    try:
        nums = tuple(int(p) for p in pages.split(",") if p.strip()) if pages else ()
    except ValueError as exc:
        raise UsageError(f"--expect {spec!r}: pages must be numbers", "e.g. --expect formula@3,4") from exc
    return Expectation(kind, nums)


def split_pages(md: str) -> dict[int, str]:
    """``{page number: text}`` from ``<!-- page N -->`` markers; ``{}`` when there are none."""
    marks = list(PAGE_MARKER.finditer(md))
    out: dict[int, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(md)
        out[int(m.group(1))] = md[m.end() : end]
    return out


def readable(text: str, cfg: VerifyConfig) -> tuple[bool, str]:
    """Is ``text`` readable prose? Returns (ok, measured detail)."""
    plain = TAG.sub(" ", COMMENT.sub(" ", text))
    chars = [c for c in plain if not c.isspace()]
    if not chars:
        return False, "no text"
    if "<think>" in text:
        return False, "contains <think>: thinking mode is on (guide 5, 8)"
    good = sum(1 for c in chars if unicodedata.category(c)[0] in "LNPS" and c != "\ufffd")
    letters = sum(1 for c in chars if unicodedata.category(c)[0] == "L")
    repl = plain.count("\ufffd") / len(chars)
    share = good / len(chars)
    detail = f"{letters} letters, {share:.0%} readable characters, {repl:.1%} U+FFFD"
    ok = share >= cfg.readable_min_share and repl <= cfg.replacement_max_share and letters >= cfg.min_letters
    return ok, detail


def _has(kind: str, text: str, cfg: VerifyConfig) -> tuple[bool, str]:
    if kind == "table":
        n = text.count("<table")
        return n > 0, f"{n} <table>"
    if kind == "formula":
        hits = cfg.latex.findall(text)
        return bool(hits), f"{len(hits)} LaTeX markers" + (f" (e.g. {hits[0]!r})" if hits else "")
    return readable(text, cfg)


def check_markdown(
    path: Path, expectations: list[Expectation] | None = None, cfg: VerifyConfig | None = None
) -> list[Check]:
    """Run the guide 6 output checks on ``path``.

    Raises:
        InputError: the file is missing or not UTF-8.
    """
    cfg = cfg or load()
    try:
        md = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError(f"{path}: Markdown file not found", "pass the output of `ocrstack parse`") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8", "pass the Markdown written by the parser") from exc
    checks: list[Check] = []
    body = COMMENT.sub("", md).strip()
    checks.append(
        Check(
            "output:non-empty",
            Status.PASS if body else Status.FAIL,
            f"{len(md)} characters" if body else "output is empty (输出为空)",
            "" if body else "parse one page first (--limit 1) and read the report; see `ocrstack doctor`",
        )
    )
    n_otsl = md.count("<otsl>")
    checks.append(
        Check(
            "output:no-otsl",
            Status.FAIL if n_otsl else Status.PASS,
            f"{n_otsl} raw <otsl> table(s): not converted to HTML" if n_otsl else "no raw <otsl>",
            "tables must go through the pipeline's OTSL->HTML step (guide 6, 8)" if n_otsl else "",
        )
    )
    pages = split_pages(md)
    for exp in expectations or []:
        name = f"output:{exp.kind}" + (f"@{','.join(map(str, exp.pages))}" if exp.pages else "")
        if not exp.pages:
            ok, detail = _has(exp.kind, md, cfg)
            checks.append(_verdict(name, exp.kind, ok, detail))
            continue
        if not pages:
            checks.append(
                Check(name, Status.NOT_RUN, "the file has no <!-- page N --> markers to find those pages")
            )
            continue
        for p in exp.pages:
            if p not in pages:
                checks.append(
                    Check(
                        f"output:{exp.kind}@{p}",
                        Status.FAIL,
                        f"page {p} is not in the file",
                        "parse that page (check --pages / --limit)",
                    )
                )
                continue
            ok, detail = _has(exp.kind, pages[p], cfg)
            checks.append(_verdict(f"output:{exp.kind}@{p}", exp.kind, ok, f"page {p}: {detail}"))
    return checks


def _verdict(name: str, kind: str, ok: bool, detail: str) -> Check:
    fixes = {
        "table": "table pages need <table> HTML (guide 6); check the layout found the table "
        "and OTSL was converted",
        "formula": "formula pages need LaTeX such as \\frac (guide 6); check the formula blocks "
        "were recognised",
        "text": "text pages must be readable (guide 6); empty or garbled output usually means "
        "thinking mode is on (guide 5: enable_thinking false)",
    }
    return Check(name, Status.PASS if ok else Status.FAIL, detail, "" if ok else fixes[kind])
