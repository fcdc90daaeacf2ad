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
* an empty block is never dropped silently: it leaves an HTML comment in the Markdown and
  an issue in the report;
* a block whose recognition failed (``Block.error``, issue 10) leaves a comment with the error
  and a visible line (:func:`failed_block`) so a reader sees that text is missing;
* recognised text is escaped so a stray ``<`` (math pages) cannot open an HTML tag and
  swallow the text after it, and a leading ``#`` cannot become a heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ocrstack.core.pages import marker as page_marker
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.types import Block, Category

_OTSL = re.compile(r"<(otsl|fcel|ecel|lcel|ucel|xcel|ched|rhed|srow|nl)>")
_OTSL_ESCAPED = re.compile(r"&lt;/?(otsl|fcel|ecel|lcel|ucel|xcel|ched|rhed|srow|nl)>")
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
_HTML_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL | re.IGNORECASE)
_ENTITY = re.compile(r"&(?=#?\w+;)")
_LINE_START = re.compile(r"^(\s*)([#>+=|]|-(?=\s)|\d+(?=[.)]\s))", re.MULTILINE)
_INLINE = re.compile(r"[\\*_`\[\]~]")
_MATH_WRAP = re.compile(r"^\s*(\$\$|\\\[|\$)(.*?)(\$\$|\\\]|\$)\s*$", re.DOTALL)
DOC_TITLE_LABELS = {"doc_title"}
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


def _table(block: Block, structured: bool, where: str, issues: list[str]) -> str:
    text = block.text.strip()
    if has_otsl(text):
        from ocrstack.parsing.assembly.otsl import otsl_to_html  # Engineer B's module, imported when needed

        return otsl_to_html(text)
    m = _HTML_TABLE.search(text)
    if m:
        return m.group(0)
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


def render_page(page: PageResult, keep_paratext: bool = False) -> Assembly:
    """Render one page's blocks (already in reading order) to Markdown."""
    parts: list[str] = []
    issues: list[str] = []
    dropped = 0
    if page.error:
        return Assembly(f"<!-- page {page.index + 1} failed: {page.error.replace('--', '- -')} -->", issues)
    for b in attach_captions(sorted(page.blocks, key=lambda x: x.order), page.size[1]):
        where = f"page {page.index + 1} block {b.order} ({b.category.value})"
        if (b.category.is_paratext or b.category is Category.ABANDON) and not keep_paratext:
            dropped += 1
            continue
        text = b.text.strip()
        if b.error:
            issues.append(f"{where}: FAILED, not recognised ({b.error}); rerun to retry it")
            parts.append(failed_block(page.index + 1, b))
            continue
        if b.category is Category.FIGURE:
            img = page.images.get(b.order)
            if img:
                parts.append(f"![figure, page {page.index + 1}]({img})")
            else:
                issues.append(f"{where}: figure image was not saved")
            if text:
                parts.append(escape_text(text))
            continue
        if not text:
            issues.append(f"{where}: empty output")
            parts.append(f"<!-- empty {b.category.value} block: page {page.index + 1}, block {b.order} -->")
            continue
        if b.category is Category.TITLE:
            level = "#" if b.label in DOC_TITLE_LABELS else "##"
            parts.append(f"{level} {escape_text(' '.join(text.split()))}")
        elif b.category is Category.TABLE:
            parts.append(_table(b, page.structured, where, issues))
        elif has_otsl(text):
            issues.append(f"{where}: the recognizer answered with an OTSL table; rendered as a table")
            parts.append(_table(b, page.structured, where, issues))
        elif b.category is Category.FORMULA:
            parts.append(_formula(b, page.structured))
        else:
            parts.append(escape_text(text))
        for w in b.warnings:
            issues.append(f"{where}: {w}")
    return Assembly("\n\n".join(parts), issues, dropped)


def render_document(pages: Iterable[PageResult], keep_paratext: bool = False) -> Assembly:
    """Render pages in order, separated by a ``<!-- page N -->`` marker; collects every issue."""
    chunks: list[str] = []
    issues: list[str] = []
    dropped = 0
    for p in sorted(pages, key=lambda x: x.index):
        a = render_page(p, keep_paratext)
        chunks.append(f"{page_marker(p.index + 1)}\n\n{a.markdown}".rstrip())
        issues.extend(a.issues)
        dropped += a.dropped_paratext
    return Assembly("\n\n".join(chunks).strip() + "\n", issues, dropped)
