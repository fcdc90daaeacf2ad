"""Blocks of a page of plain text straight from its text layer: no layout model (issue 21 item 2).

Cost follows content: a born-digital page whose layer is sound and that holds nothing but
upright text needs no layout model to be read. :func:`plain_reason` says why a page is not
plain text (None when it is):

* an image object or a form XObject (a figure, a scan, content this module does not walk);
* a path object that is not a thin rule, or more than :data:`MAX_RULES` rules (a table, a boxed
  listing, a drawing: the layout model and :mod:`ocrstack.parsing.tables.born_digital` read
  those; the corpus tables have 20-102 path objects, its plain pages 0 or 1 rule);
* unfaithful characters (math: the recognizer reads those formulas) or more than
  :data:`MAX_TURNED` of the characters not upright (rotated text boxes).

On a plain page :func:`layer_blocks` groups the layer's lines (:func:`~.lines.build_lines`,
content-stream order) into paragraph blocks: a line on the row of the line before it (to its
right: a table-of-contents page number) joins its block; otherwise a line joins the block of the
line before it when it starts below it with a gap under :data:`PARAGRAPH_GAP` body line heights,
shares a font with it, overlaps the block horizontally, is not a list item (``LIST_MARK``) and is
not a first-line indent (:data:`INDENT`; a list item's hanging indent is not one). A one-line
block within :data:`MARGIN` of the top or bottom, with no other line within a body line height
of it, is a header, or a page number (digits) or footer; a block of at most two lines, at most
:data:`MAX_TITLE_CHARS` characters, with a letter, not ending as a sentence or with a page
number, is a title when it is set in fonts other than the body font (the font of most
characters) and its lines are :data:`TITLE_HEIGHT` times the median line height or more.
The pipeline then fills, orders and assembles these blocks as it does the layout model's
(:func:`~.stage.fill_blocks`, :func:`~ocrstack.parsing.reading_order.order_blocks`); blocks.json
labels them ``text-layer``.
"""

from __future__ import annotations

import re
from collections import Counter
from statistics import median

from ocrstack.parsing.geometry import union
from ocrstack.parsing.lines.assign import LIST_MARK, Line
from ocrstack.parsing.textlayer.extract import PageText
from ocrstack.parsing.textlayer.soundness import Verdict
from ocrstack.parsing.types import Block, Category

#: Most thin rules (header rules, a footnote rule) on a plain page.
MAX_RULES = 2
#: A path is a rule when its thinner side is at most this many points (converted at the DPI).
RULE_PT = 2.0
#: Most share of characters not upright: the mirrored E of the XeTeX logo on en_twocol_ltnews24
#: (2 of 3370 characters) is text, a rotated text box is not.
MAX_TURNED = 0.01
#: Largest gap between two lines of one paragraph, in line heights (TeX sets lines 1.2 apart:
#: a gap of 0.2; the blank line of a paragraph break is 1.0 and more).
PARAGRAPH_GAP = 0.6
#: A line starting this many line heights right of its block's left edge opens a paragraph.
INDENT = 0.8
#: Height over the page's median line height from which a short block in its own font is a title:
#: the section heads of en_twocol_ltnews24 (LMSans12-Oblique, 30-37 px at 200 DPI) over its body
#: (LMRoman10, median 25-28 px); the option names of en_single_bzip2_manual, one line each in
#: their own font, are smaller than its body (21 px vs 25 px) and are not titles.
TITLE_HEIGHT = 1.05
#: Longest title (characters) and the endings of a sentence, not a title (as
#: :mod:`ocrstack.parsing.textlayer.headings`).
MAX_TITLE_CHARS = 80
SENTENCE_END = (".", ",", ";", ":")
#: Share of the page height at the top and the bottom where a lone line is paratext: the
#: running heads and page numbers of the corpus's plain pages lie within 7.6 % of an edge, their
#: first and last body lines 9 % and more away.
MARGIN = 0.085
#: A page number: no letter, at least one digit. Two linear searches: the one pattern
#: ``^[\W\d_]*\d[\W\d_]*$`` backtracked over every split of a digit run, O(n^2) on a long run of
#: digits followed by a letter (the hardening issue, item 1).
_NOT_NUMBER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"\d")


def is_page_number(text: str) -> bool:
    """True when ``text`` holds a digit and no letter ("12", "- 3 -", "iv" is not one)."""
    return not _NOT_NUMBER.search(text) and bool(_DIGIT.search(text))


def objects_reason(pt: PageText, dpi: float) -> str | None:
    """Why the page needs the layout model from its image, form and path objects alone (the
    first three rules of the module docstring; the characters need not be read yet), or None.
    ``dpi``: the pixels of ``pt`` per inch."""
    if pt.images or pt.forms:
        return "images or form objects on the page"
    thin = RULE_PT * dpi / 72.0
    rules = [p for p in pt.paths if min(p[2] - p[0], p[3] - p[1]) <= thin]
    if len(rules) < len(pt.paths):
        return "drawings on the page (path objects other than rules)"
    if len(rules) > MAX_RULES:
        return f"{len(rules)} rules on the page (a table?)"
    return None


def plain_reason(pt: PageText, verdict: Verdict, dpi: float) -> str | None:
    """Why the page needs the layout model, or None when its layer alone can be read
    (see module docstring). ``dpi``: the pixels of ``pt`` per inch."""
    reason = objects_reason(pt, dpi)
    if reason is not None:
        return reason
    if verdict.counts.get("bad", 0):
        return "unfaithful characters (math)"
    chars = [c for c in pt.chars if not c.generated and c.text.strip()]
    turned = sum(1 for c in chars if c.direction != 0)
    if turned > MAX_TURNED * max(1, len(chars)):
        return "text not upright"
    return None


def _row(prev: Line, ln: Line) -> bool:
    """``ln`` continues ``prev``'s row to the right (a table-of-contents page number, a gap
    wider than :data:`~.lines.MAX_GAP` inside one line)."""
    h = min(prev.bbox[3] - prev.bbox[1], ln.bbox[3] - ln.bbox[1])
    overlap = min(prev.bbox[3], ln.bbox[3]) - max(prev.bbox[1], ln.bbox[1])
    return overlap >= 0.5 * h and ln.bbox[0] >= prev.bbox[2]


def _joins(block: list[tuple[Line, frozenset[str]]], ln: Line, fonts: frozenset[str], body: float) -> bool:
    """``ln`` (set in ``fonts``) continues the paragraph ``block`` (see module docstring)."""
    prev, prev_fonts = block[-1]
    if _row(prev, ln):
        return True
    first = block[0][0]
    x0, x1 = min(b.bbox[0] for b, _ in block), max(b.bbox[2] for b, _ in block)
    gap = ln.bbox[1] - prev.bbox[3]
    if gap < -0.3 * body or gap > PARAGRAPH_GAP * body or not fonts & prev_fonts:
        return False
    if LIST_MARK.match(ln.text):  # a list item opens a block
        return False
    if min(x1, ln.bbox[2]) - max(x0, ln.bbox[0]) < 0.5 * min(x1 - x0, ln.bbox[2] - ln.bbox[0]):
        return False
    if LIST_MARK.match(first.text):  # the hanging indent of a list item's next lines
        return True
    return not (ln.bbox[0] - x0 > INDENT * body and prev.bbox[0] - x0 <= 0.3 * body)


def _body_font(groups: list[list[tuple[Line, frozenset[str]]]]) -> str | None:
    count: Counter[str] = Counter()
    for g in groups:
        for ln, f in g:
            if len(f) == 1:
                count[next(iter(f))] += len(ln.text)
    return count.most_common(1)[0][0] if count else None


def _isolated(ln: Line, lines: list[Line], body: float) -> bool:
    """No other line of the page within ``body`` pixels above or below ``ln``."""
    for other in lines:
        if other is not ln and max(other.bbox[1] - ln.bbox[3], ln.bbox[1] - other.bbox[3]) < body:
            return False
    return True


def _category(
    group: list[tuple[Line, frozenset[str]]], lines: list[Line], body: float, font: str | None, height: float
) -> Category:
    own = [ln for ln, _ in group]
    box = union([ln.bbox for ln in own])
    text = " ".join(ln.text for ln in own).strip()
    top, bottom = box[3] <= MARGIN * height, box[1] >= (1 - MARGIN) * height
    if len(own) == 1 and (top or bottom) and _isolated(own[0], lines, body):
        if bottom and is_page_number(text):
            return Category.PAGE_NUMBER
        return Category.HEADER if top else Category.FOOTER
    tall = median(ln.bbox[3] - ln.bbox[1] for ln in own) >= TITLE_HEIGHT * body
    own_font = font is not None and all(font not in f for _, f in group)
    heading = (
        len(own) <= 2
        and len(text) <= MAX_TITLE_CHARS
        and any(ch.isalpha() for ch in text)
        and not text.endswith(SENTENCE_END)
        and not text[-1:].isdigit()  # a table-of-contents entry ends with its page number
    )
    return Category.TITLE if heading and tall and own_font else Category.TEXT


def layer_blocks(pt: PageText) -> list[Block]:
    """Paragraph, title and paratext blocks of a plain page (see module docstring), in content
    stream order, bbox in page pixels, score 1.0, label ``text-layer``."""
    from ocrstack.parsing.textlayer.stage import layer_lines

    lines, fonts = layer_lines(pt)
    if not lines:
        return []
    body = median(ln.bbox[3] - ln.bbox[1] for ln in lines)
    groups: list[list[tuple[Line, frozenset[str]]]] = []
    for ln, f in zip(lines, fonts, strict=True):
        if groups and _joins(groups[-1], ln, f, body):
            groups[-1].append((ln, f))
        else:
            groups.append([(ln, f)])
    font, height = _body_font(groups), float(pt.size[1])
    return [
        Block(
            bbox=union([ln.bbox for ln, _ in g]),
            category=_category(g, lines, body, font, height),
            score=1.0,
            order=n,
            label="text-layer",
        )
        for n, g in enumerate(groups)
    ]
