"""Output checks on a parsed Markdown file (guide 6).

* non-empty (``assert md.strip()``),
* no ``<otsl>`` left (tables must be converted to HTML),
* ``<table>`` on the pages expected to hold tables,
* LaTeX (e.g. ``\\frac``) on the pages expected to hold formulas,
* readable text on text pages: mostly letters/digits/punctuation, few U+FFFD, no ``<think>``
  (guide 8: empty or garbled output = thinking mode left on).

Pages are split on the ``<!-- page N -->`` markers ``ocrstack parse`` writes; expectations
for specific pages are not-run when the file has no markers.

Which pages are table / formula / text pages comes from the ``X.blocks.json`` that
``ocrstack parse`` writes beside ``X.md`` (:func:`expectations_from_blocks`: a page whose
layout found a table block must hold ``<table>``, a formula block LaTeX), and/or from
``--expect KIND@PAGES`` (:func:`merge`: an ``--expect`` kind replaces that kind's pages read
from the blocks file, other kinds are added). Every page check names where its expectation
came from.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.core.errors import InputError, UsageError
from ocrstack.core.pages import split_pages
from ocrstack.core.results import Check, Status
from ocrstack.verifying.config import VerifyConfig, load

COMMENT = re.compile(r"<!--.*?-->", re.S)
TAG = re.compile(r"<[^>]+>")
KINDS = ("table", "formula", "text")


@dataclass(frozen=True)
class Expectation:
    """``kind`` (table|formula|text) expected on ``pages`` (1-based; empty = anywhere in the file).

    ``source`` says where the expectation came from (``--expect`` or a blocks file); ``hint``
    is added to the fix when the check fails (e.g. the recognizer gave plain text).
    """

    kind: str
    pages: tuple[int, ...] = ()
    source: str = "--expect"
    hint: str = ""


@dataclass(frozen=True)
class BlocksExpectations:
    """Expectations read from a ``NAME.blocks.json`` (see :func:`expectations_from_blocks`).

    Attributes:
        path: the blocks file.
        expectations: one per kind found (pages 1-based, ascending).
        layout / recognizer: the providers named in the file.
        complete: the file's ``complete`` flag (False: some pages failed or the run stopped).
        failed_pages: 1-based pages with an ``error`` (no blocks, so no expectation).
    """

    path: Path
    expectations: list[Expectation] = field(default_factory=list)
    layout: str = ""
    recognizer: str = ""
    complete: bool = True
    failed_pages: tuple[int, ...] = ()

    def describe(self) -> str:
        """One line: ``"NAME.blocks.json (layout L, recognizer R): table on pages 2; text on 1, 2"``."""
        found = "; ".join(f"{e.kind} on page(s) {', '.join(map(str, e.pages))}" for e in self.expectations)
        return f"{self.path.name} (layout {self.layout or '?'}, recognizer {self.recognizer or '?'}): " + (
            found or "no table, formula or text blocks"
        )


_OUTPUT_FORM = {"table": "HTML tables", "formula": "LaTeX"}

#: Block categories whose text counts towards a text page (types.Category values).
TEXT_CATEGORIES = ("text", "title", "list")


def blocks_file_for(markdown: Path) -> Path:
    """``OUT/NAME.md`` -> ``OUT/NAME.blocks.json`` (as :class:`~ocrstack.parsing.outputs.OutputPaths`)."""
    return markdown.with_name(markdown.stem + ".blocks.json")


def expectations_from_blocks(path: Path, cfg: VerifyConfig | None = None) -> BlocksExpectations:
    """Derive page expectations from the blocks file ``ocrstack parse`` wrote (schema 1).

    Rules (guide 6: "表格页应有 <table>，公式页应有 LaTeX，正文页应是可读文本"):

    * ``table@p`` for every page with a block of category ``table``;
    * ``formula@p`` for every page with a block of category ``formula``;
    * ``text@p`` for every page whose ``text``/``title``/``list`` blocks hold at least
      ``min-letters`` letters (verify.yaml), i.e. a page the parser read prose on.

    Pages with an ``error`` have no blocks and get no expectation (listed in ``failed_pages``).
    When a page is ``structured: false`` (rapidocr: tables and formulas as plain text) the
    table/formula expectation still applies -- the check fails honestly -- and its fix names
    the recognizer.

    Raises:
        InputError: the file cannot be read, is not JSON, or lacks ``pages``/``blocks``.
    """
    cfg = cfg or load()
    fix = "rerun `ocrstack parse` to rewrite it, or pass --no-blocks and give --expect KIND@PAGES"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        pages = data["pages"]
        per_kind: dict[str, list[int]] = {k: [] for k in KINDS}
        plain: dict[str, list[int]] = {"table": [], "formula": []}
        failed = []
        for page in pages:
            no = int(page["page"])
            if page.get("error"):
                failed.append(no)
                continue
            cats = {str(b["category"]) for b in page["blocks"]}
            letters = sum(
                sum(ch.isalpha() for ch in str(b.get("text", "")))
                for b in page["blocks"]
                if b["category"] in TEXT_CATEGORIES
            )
            for kind in ("table", "formula"):
                if kind in cats:
                    per_kind[kind].append(no)
                    if not page.get("structured", False):
                        plain[kind].append(no)
            if letters >= cfg.min_letters:
                per_kind["text"].append(no)
    except FileNotFoundError as exc:
        raise InputError(f"{path}: blocks file not found", fix) from exc
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{path}: not a blocks file written by `ocrstack parse` ({exc!r})", fix) from exc
    recognizer = str(data.get("recognizer", ""))
    exps = []
    for kind, nums in per_kind.items():
        if not nums:
            continue
        what = {"table": "table blocks", "formula": "formula blocks", "text": "text blocks"}[kind]
        hint = ""
        if plain.get(kind):
            hint = (
                f"{path.name} says recognizer '{recognizer}' returned plain text (structured: false) on "
                f"page(s) {', '.join(map(str, plain[kind]))}: it cannot produce {_OUTPUT_FORM[kind]}; "
                "parse with a structured recognizer (--recognizer openai and a MiniCPM-OCR server)"
            )
        exps.append(Expectation(kind, tuple(sorted(nums)), f"{path.name}: layout found {what}", hint))
    return BlocksExpectations(
        path=path,
        expectations=exps,
        layout=str(data.get("layout", "")),
        recognizer=recognizer,
        complete=bool(data.get("complete", True)),
        failed_pages=tuple(failed),
    )


def merge(derived: list[Expectation], explicit: list[Expectation]) -> list[Expectation]:
    """``--expect`` overrides per kind: an explicit kind replaces the derived pages of that kind,
    derived kinds not given explicitly are kept, explicit ones are added."""
    given = {e.kind for e in explicit}
    return [e for e in derived if e.kind not in given] + list(explicit)


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
        why = f" (expected: {exp.source})"
        if not exp.pages:
            ok, detail = _has(exp.kind, md, cfg)
            checks.append(_verdict(name, exp.kind, ok, detail + why, exp.hint))
            continue
        if not pages:
            checks.append(
                Check(
                    name, Status.NOT_RUN, "the file has no <!-- page N --> markers to find those pages" + why
                )
            )
            continue
        for p in exp.pages:
            if p not in pages:
                checks.append(
                    Check(
                        f"output:{exp.kind}@{p}",
                        Status.FAIL,
                        f"page {p} is not in the file{why}",
                        "parse that page (check --pages / --limit)",
                    )
                )
                continue
            ok, detail = _has(exp.kind, pages[p], cfg)
            checks.append(
                _verdict(f"output:{exp.kind}@{p}", exp.kind, ok, f"page {p}: {detail}{why}", exp.hint)
            )
    return checks


def _verdict(name: str, kind: str, ok: bool, detail: str, hint: str = "") -> Check:
    fixes = {
        "table": "table pages need <table> HTML (guide 6); check the layout found the table "
        "and OTSL was converted",
        "formula": "formula pages need LaTeX such as \\frac (guide 6); check the formula blocks "
        "were recognised",
        "text": "text pages must be readable (guide 6); empty or garbled output usually means "
        "thinking mode is on (guide 5: enable_thinking false)",
    }
    fix = "" if ok else fixes[kind] + (f"; {hint}" if hint else "")
    return Check(name, Status.PASS if ok else Status.FAIL, detail, fix)
