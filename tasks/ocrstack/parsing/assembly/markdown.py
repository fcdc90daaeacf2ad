"""Stitch page results into Markdown (issue 3 step 4; guide 6 for what a good result holds).

* titles become headings (``#`` for a document title label, ``##`` otherwise);
* formulas from a structured recognizer become ``$$ ... $$``; plain OCR text of a formula
  (rapidocr) stays plain text, with the recognizer's warning in the report;
* tables: OTSL is converted with :func:`ocrstack.parsing.assembly.otsl.otsl_to_html`, ``<table>``
  HTML passes through, anything else is plain text (flagged when the recognizer was
  supposed to return structure);
* figures are linked images (the crop saved by the pipeline), followed by any text read
  inside them; captions are moved next to their figure or table;
* header, footer, page number and abandoned blocks are dropped unless ``keep_paratext``;
* an empty block is never dropped silently: it leaves an issue in the report and a warning in
  blocks.json (``empty-blocks`` of the output check), not a comment in the Markdown, where it
  was noise for a reader (issue 22 class 10);
* a block whose recognition failed (``Block.error``, issue 10) leaves a comment with the error
  and a visible line (:func:`failed_block`) so a reader sees that text is missing;
* recognised text is escaped so a stray ``<`` (math pages) cannot open an HTML tag and
  swallow the text after it, and a leading ``#`` cannot become a heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.core.pages import marker as page_marker
from ocrstack.parsing.assembly.heading_text import heading_like
from ocrstack.parsing.assembly.paragraphs import (
    Vocabulary,
    continues,
    join_paragraph,
    join_rows,
    list_item,
    paragraphs,
)
from ocrstack.parsing.assembly.running import running_blocks
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.types import Block, Category

_OTSL = re.compile(r"<(otsl|fcel|ecel|lcel|ucel|xcel|ched|rhed|srow|nl)>")
_OTSL_ESCAPED = re.compile(r"&lt;/?(otsl|fcel|ecel|lcel|ucel|xcel|ched|rhed|srow|nl)>")
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
#: ``<table`` ... the first ``</table>`` after it, found as two searches: a lazy ``<table\b.*?</table>``
#: scanned to the end of the text from every ``<table`` when no ``</table>`` follows, O(n^2) (the
#: hardening issue, item 1).
_TABLE_OPEN = re.compile(r"<table\b", re.IGNORECASE)
_TABLE_CLOSE = re.compile(r"</table>", re.IGNORECASE)
_ENTITY = re.compile(r"&(?=#?\w+;)")
#: ``[^\S\n]*``, not ``\s*``: a blank run that crossed newlines was rescanned from every line start
#: in it, O(n^2) on a run of newlines (the hardening issue, item 1); the same lines are escaped.
_LINE_START = re.compile(r"^([^\S\n]*)([#>+=|]|-(?=\s)|\d+(?=[.)]\s))", re.MULTILINE)
_INLINE = re.compile(r"[\\*_`\[\]~]")
_MATH_WRAP = re.compile(r"^\s*(\$\$|\\\[|\$)(.*?)(\$\$|\\\]|\$)\s*$", re.DOTALL)
DOC_TITLE_LABELS = {"doc_title"}
#: In the issue of a block whose recognition failed (``Block.error``): counted as an error.
FAILED_ISSUE = ": FAILED, "
#: a caption this far (fraction of page height) from a figure/table at most is attached to it
CAPTION_REACH = 0.15


@dataclass
class Assembly:
    """Markdown text plus the issues found while assembling (``"page P block N (cat): ..."``)."""

    markdown: str
    issues: list[str] = field(default_factory=list)
    dropped_paratext: int = 0


def escape_text(text: str) -> str:
    """Escape recognised text for Markdown so it renders as the literal characters read.

    * ``<`` -> ``&lt;`` and ``&`` before an entity-like name -> ``&amp;`` (no HTML tag or
      entity can swallow the text after it);
    * the CommonMark inline markers backslash, ``*``, ``_``, backtick, ``[``, ``]`` and ``~``
      (GFM strikethrough) get a backslash everywhere (emphasis, code spans, links);
    * a leading ``#``, ``>``, ``-``, ``+``, ``=``, ``|`` or the dot of ``1.`` on a line gets a backslash so
      OCR text cannot turn into headings, quotes, lists or tables.

    Source of the escapable set: CommonMark 0.31 section 2.4 (any ASCII punctuation may be
    backslash-escaped).
    """
    text = _ENTITY.sub("&amp;", text)
    text = text.replace("<", "&lt;")
    text = _INLINE.sub(r"\\\g<0>", text)
    # a digit is not escapable (CommonMark 2.4): "1. x" becomes "1\\. x", the rest "\\# x"
    return _LINE_START.sub(
        lambda m: m.group(1) + (m.group(2) + "\\" if m.group(2).isdigit() else "\\" + m.group(2)), text
    )


def has_otsl(text: str) -> bool:
    """True when ``text`` contains OTSL tokens (``<otsl>``, ``<fcel>``, ``<nl>`` ...)."""
    return bool(_OTSL.search(text))


def has_escaped_otsl(text: str) -> bool:
    """True when ``text`` contains OTSL tokens written escaped (``&lt;fcel>``): raw OTSL that
    reached the Markdown as text instead of as a table."""
    return bool(_OTSL_ESCAPED.search(text))


def html_table(text: str) -> str | None:
    """The first HTML table of ``text``: from ``<table`` (any case, a whole word) through the first
    ``</table>`` after it; None without both. Linear in ``len(text)``."""
    start = _TABLE_OPEN.search(text)
    end = _TABLE_CLOSE.search(text, start.end()) if start else None
    return text[start.start() : end.end()] if start and end else None


def _table(block: Block, structured: bool, where: str, issues: list[str]) -> str:
    text = block.text.strip()
    if has_otsl(text):
        from ocrstack.parsing.assembly.otsl import otsl_to_html  # Engineer B's module, imported when needed

        return otsl_to_html(text)
    table = html_table(text)
    if table is not None:
        return table
    if structured:
        issues.append(f"{where}: table came back without OTSL or <table>; kept as plain text")
    return escape_text(text)


def _formula(block: Block, structured: bool) -> str:
    text = block.text.strip()
    if not structured:
        return escape_text(text)
    m = _MATH_WRAP.match(text)
    if m:
        text = m.group(2).strip()
    # "a<b" would open an HTML tag for a Markdown renderer (CommonMark: "<" + letter, "/", "!"
    # or "?"); a space after "<" is neutral in LaTeX math mode and keeps the formula intact.
    text = _TAG_START.sub("< ", text)
    return f"$$\n{text}\n$$"


def attach_captions(blocks: list[Block], page_height: float) -> list[Block]:
    """Return ``blocks`` with each caption moved next to the nearest figure/table.

    Nearest = horizontally overlapping, vertical distance at most ``CAPTION_REACH`` of the
    page height; a caption above its object goes right before it, below it right after.
    Captions with no such object stay where they are.
    """
    objects = [b for b in blocks if b.category in (Category.FIGURE, Category.TABLE)]
    placement: dict[int, tuple[int, bool]] = {}  # id(caption) -> (id(object), before)
    for c in blocks:
        if c.category is not Category.CAPTION:
            continue
        best = None
        for o in objects:
            if min(o.bbox[2], c.bbox[2]) <= max(o.bbox[0], c.bbox[0]):
                continue
            above = c.bbox[3] <= (o.bbox[1] + o.bbox[3]) / 2
            dist = max(0.0, o.bbox[1] - c.bbox[3]) if above else max(0.0, c.bbox[1] - o.bbox[3])
            if dist <= CAPTION_REACH * page_height and (best is None or dist < best[0]):
                best = (dist, o, above)
        if best is not None:
            placement[id(c)] = (id(best[1]), best[2])
    if not placement:
        return list(blocks)
    moved = [b for b in blocks if id(b) not in placement]
    out: list[Block] = []
    for b in moved:
        before = [c for c in blocks if placement.get(id(c)) == (id(b), True)]
        after = [c for c in blocks if placement.get(id(c)) == (id(b), False)]
        out.extend([*before, b, *after])
    return out


def failed_block(page: int, block: Block) -> str:
    """The Markdown of a block that could not be read: an HTML comment with the error (``--``
    made safe, cut at 300 characters) and a visible quoted line naming page, block and the fix."""
    error = " ".join(str(block.error).split()).replace("--", "- -")
    error = error[:300] + ("..." if len(error) > 300 else "")
    return (
        f"<!-- ocrstack: failed {block.category.value} block: page {page}, block {block.order}: {error} -->\n"
        f"> **Text missing:** page {page}, block {block.order} ({block.category.value}) could not be "
        "read. Rerun the same command to retry it."
    )


@dataclass
class _Para:
    """A text paragraph not yet written: raw text, or a list item (``marker``); ``first``: the
    first paragraph of its block (only those may go on from the block before)."""

    raw: str
    marker: str = ""
    first: bool = False

    def markdown(self) -> str:
        body = escape_text(self.raw)
        if not self.marker:
            return body
        pad = " " * (len(self.marker) + 1)
        return f"{self.marker} " + body.replace("\n", "\n" + pad)


#: Blocks whose text is running prose: their paragraphs may go on in the next such block.
_PROSE = (Category.TEXT, Category.LIST)


def _text_parts(text: str, vocab: Vocabulary) -> list[_Para]:
    out = []
    for n, rows in enumerate(paragraphs(text)):
        raw = join_paragraph(rows, vocab)
        item = list_item(raw)
        out.append(_Para(item[1], item[0]) if item else _Para(raw, first=n == 0))
    return out


def _page_parts(
    page: PageResult, keep_paratext: bool, vocab: Vocabulary, running: frozenset[int] = frozenset()
) -> tuple[list[str | _Para | None], list[str], int]:
    """Parts of one page: Markdown strings, prose paragraphs (:class:`_Para`) and None where a
    block that is not prose stands between two prose blocks (no joining across it). ``running``:
    orders of text blocks found to be running heads or page numbers (:mod:`.running`), dropped
    like paratext."""
    parts: list[str | _Para | None] = []
    issues: list[str] = []
    dropped = 0
    blocks = attach_captions(sorted(page.blocks, key=lambda x: x.order), page.size[1])
    # paratext that is the page's only text is kept (issue 10 item 7: a sparse page whose two
    # lines the layout model labelled header came out empty)
    only_paratext = not any(
        b.text.strip() and not (b.category.is_paratext or b.category in (Category.ABANDON, Category.FIGURE))
        for b in blocks
    )
    for b in blocks:
        where = f"page {page.index + 1} block {b.order} ({b.category.value})"
        if b.order in running and not keep_paratext and not only_paratext:
            dropped += 1
            continue
        if (b.category.is_paratext or b.category is Category.ABANDON) and not keep_paratext:
            if not (only_paratext and b.category.is_paratext and b.text.strip()):
                dropped += 1
                continue
            issues.append(f"{where}: kept although paratext: it is the only text of the page")
        text = b.text.strip()
        if b.error:
            issues.append(f"{where}{FAILED_ISSUE}not recognised ({b.error}); rerun to retry it")
            parts.extend([failed_block(page.index + 1, b), None])
            continue
        if b.category is Category.FIGURE:
            img = page.images.get(b.order)
            if img:
                parts.append(f"![figure, page {page.index + 1}]({img})")
            else:
                issues.append(f"{where}: figure image was not saved")
            if text:
                parts.append(escape_text(text))
            parts.append(None)
            continue
        if not text:
            issues.append(f"{where}: empty output")
            continue
        if b.category is Category.TITLE and (b.label in DOC_TITLE_LABELS or heading_like(text)):
            level = "#" if b.label in DOC_TITLE_LABELS else "##"
            parts.append(f"{level} {escape_text(' '.join(text.split()))}")
        elif b.category is Category.TABLE:
            parts.append(_table(b, page.structured, where, issues))
        elif has_otsl(text):
            issues.append(f"{where}: the recognizer answered with an OTSL table; rendered as a table")
            parts.append(_table(b, page.structured, where, issues))
        elif b.category is Category.FORMULA:
            parts.append(_formula(b, page.structured))
        elif b.category in _PROSE:
            parts.extend(_text_parts(text, vocab))
        else:
            parts.extend(p.markdown() for p in _text_parts(text, vocab))
        if b.category not in _PROSE:
            parts.append(None)
        for w in b.warnings:
            issues.append(f"{where}: {w}")
    return parts, issues, dropped


def _join_continued(parts: list[str | _Para | None], vocab: Vocabulary) -> list[str | _Para | None]:
    """Merge each prose paragraph into the prose paragraph right before it (another block: a
    column break) when it goes on from it (:func:`continues`)."""
    out: list[str | _Para | None] = []
    for p in parts:
        if isinstance(p, _Para) and p.first:
            prev = out[-1] if out else None
            if isinstance(prev, _Para) and not prev.marker and continues(prev.raw, p.raw):
                prev.raw = join_rows(prev.raw, p.raw, vocab)
                continue
        out.append(p)
    return out


def _write(parts: list[str | _Para | None]) -> str:
    chunks: list[str] = []
    for p in parts:
        if p is None:
            continue
        md = p.markdown() if isinstance(p, _Para) else p
        # consecutive list items form one (tight) list
        if isinstance(p, _Para) and p.marker and chunks and _is_item(chunks[-1]):
            chunks[-1] = f"{chunks[-1]}\n{md}"
            continue
        chunks.append(md)
    return "\n\n".join(chunks)


def _is_item(md: str) -> bool:
    return md.startswith("- ") or bool(re.match(r"\d{1,3}\. ", md))


def render_page(page: PageResult, keep_paratext: bool = False, vocab: Vocabulary | None = None) -> Assembly:
    """Render one page's blocks (already in reading order) to Markdown.

    ``vocab``: the document's words for undoing end-of-line hyphenation
    (:class:`~ocrstack.parsing.assembly.paragraphs.Vocabulary`; default: this page's).
    """
    if page.error:
        return Assembly(f"<!-- page {page.index + 1} failed: {page.error.replace('--', '- -')} -->", [])
    vocab = vocab or Vocabulary.of(b.text for b in page.blocks)
    running = frozenset(running_blocks([page]).get(page.index, ()))
    parts, issues, dropped = _page_parts(page, keep_paratext, vocab, running)
    return Assembly(_write(_join_continued(parts, vocab)), issues, dropped)


def render_document(pages: Iterable[PageResult], keep_paratext: bool = False) -> Assembly:
    """Render pages in order, separated by a ``<!-- page N -->`` marker; collects every issue.

    A prose paragraph cut by a page break (the last part of a page, the first of the next, and
    :func:`~ocrstack.parsing.assembly.paragraphs.continues`) is joined and written on the page
    where it starts.
    """
    pages = sorted(pages, key=lambda x: x.index)
    vocab = Vocabulary.of(b.text for p in pages for b in p.blocks)
    issues: list[str] = []
    dropped = 0
    per_page: list[list[str | _Para | None] | str] = []
    running = running_blocks(pages)
    for p in pages:
        if p.error:
            per_page.append(render_page(p).markdown)
            continue
        heads = frozenset(running.get(p.index, ()))
        parts, page_issues, page_dropped = _page_parts(p, keep_paratext, vocab, heads)
        per_page.append(_join_continued(parts, vocab))
        issues.extend(page_issues)
        dropped += page_dropped
    for k in range(1, len(per_page)):
        prev, cur = per_page[k - 1], per_page[k]
        if isinstance(prev, str) or isinstance(cur, str) or not prev or not cur:
            continue
        last, first = prev[-1], cur[0]
        if isinstance(last, _Para) and isinstance(first, _Para) and first.first and not last.marker:
            if continues(last.raw, first.raw):
                last.raw = join_rows(last.raw, first.raw, vocab)
                del cur[0]
    chunks = [
        f"{page_marker(p.index + 1)}\n\n{body if isinstance(body, str) else _write(body)}".rstrip()
        for p, body in zip(pages, per_page, strict=True)
    ]
    return Assembly("\n\n".join(chunks).strip() + "\n", issues, dropped)


def summary(issues: list[str], errors: int, markdown: Path) -> str:
    """The tail of a parse's summary line for the document written to ``markdown`` (NAME.md):
    ``"0 errors, 2 warnings (see NAME.blocks.json)"``.

    ``errors``: what makes the output wrong or incomplete (the failed post-write validation
    checks, one per failed page, :mod:`ocrstack.parsing.run.validate`), counted by the caller;
    ``issues``: the assembly's notes: a block that failed (:data:`FAILED_ISSUE`) is an error,
    the rest (empty blocks, plain-text fallbacks, kept paratext) are warnings. Issue 10 item 8:
    "N issue(s) listed in blocks.json" did not say whether anything was wrong.
    """
    failed = sum(FAILED_ISSUE in i for i in issues)
    e, w = errors + failed, len(issues) - failed
    where = markdown.with_suffix(".blocks.json").name
    return f"{e} error{'s' * (e != 1)}, {w} warning{'s' * (w != 1)} (see {where})"
