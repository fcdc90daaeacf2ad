"""Text lines and their assignment to layout blocks (whole-page readers).

Used by the ``rapidocr`` recognizer (:mod:`ocrstack.parsing.recognition.rapidocr.recognizer`), which reads
the whole page once, and by the PDF text layer, whose words become lines: every line goes to
exactly one layout block, lines no block covers become ``recovered`` blocks. Assembly joins
paragraphs by the same sentence and list rules (:data:`SENTENCE_END`, :data:`LIST_MARK`).
"""

from __future__ import annotations

import re
from statistics import median

from ocrstack.parsing.geometry import area, covered, union
from ocrstack.parsing.lines import rotated
from ocrstack.parsing.lines.line import Line
from ocrstack.parsing.lines.margins import split_margin_rows
from ocrstack.parsing.lines.tabular import find_tables
from ocrstack.parsing.lines.titles import promote_title_lines
from ocrstack.parsing.reading_order import order_lines
from ocrstack.parsing.tables.grid import FIGURE, table_from_lines
from ocrstack.parsing.types import BBox, Block, Category

#: A line whose box holds at least this fraction of a block, and is at most this many times
#: the block's area, belongs to that block even though the block covers less than half of
#: it: rapid-layout boxes page numbers tightly around the glyphs, rapidocr pads its line box
#: (measured 2.3-3.1x the area on en_single_libtasn1_intro and zh_ctex_manual, where the page
#: number was recovered as body text and the page-number block reported empty).
CONTAINED_BLOCK = 0.8
CONTAINED_AREA_RATIO = 4.0
#: Blocks whose lines are read row by row (ocrstack.parsing.reading_order.order_table_lines) rather
#: than column by column: tables, and figures, whose text is labels or a table the layout
#: model took for a picture (tables_zh_debian_reference: "Table 1.24" is labelled figure;
#: read column-wise it gave "stdin stdout stderr" before their descriptions).
ROW_ORDER = (Category.TABLE, Category.FIGURE)
#: A table block larger than this share of the page's text area is not made a ``<table>`` from
#: line geometry: rapid-layout labels all of the 3-column en_multicol_pari_refcard a table, and
#: as a grid its OCR read row-wise across the columns (CER 0.05 -> 0.74, order 0.97 -> 0.55);
#: the corpus tables cover 10-35% of their pages' text area.
TABLE_MAX_SHARE = 0.5
FALLBACK_WARNING = {
    Category.TABLE: "table read as plain OCR text: rapidocr recognises no table structure "
    "(use --recognizer openai with an OTSL-capable model for HTML tables)",
    Category.FORMULA: "formula read as plain OCR text: rapidocr produces no LaTeX "
    "(use --recognizer openai for $$...$$ formulas)",
}


def assign_lines(
    blocks: list[Block], lines: list[Line], structured: bool = False, height: float | None = None
) -> list[Block]:
    """Give every line to exactly one block and set the blocks' text (nothing is read twice).

    A line goes to the block covering the largest fraction of it (at least 0.5); on a tie
    the smaller block wins (a title inside a text block keeps its own line). A figure also
    takes a line whose box holds at least half of the figure (tables_googledocs_grid: the
    picture of a snake came back as one "line" reading "2", larger than the figure box). Text-bearing
    blocks grow to contain their lines so crops and overlays show whole glyphs. Lines no
    block covers are grouped into ``recovered`` TEXT blocks (issue 3: 17% of the bzip2
    manual's lines fell outside every rapid-layout block). Table-of-contents page numbers
    outside tables and figures are first joined to their entries (:func:`merge_toc_numbers`:
    the layout model boxes the column of numbers apart from the titles on en_twocol_ltnews24
    page 1).

    Without a ``structured`` recognizer, a table block's lines become a ``<table>`` from their
    geometry (:func:`ocrstack.parsing.tables.grid.table_from_lines`) when they form at least
    2 x 2 cells and the block covers at most :data:`TABLE_MAX_SHARE` of the area the page's
    lines span.

    ``height`` (the page's, pixels; whole-page lines only): a spread running-head or footer row
    becomes a block of its own first (:func:`ocrstack.parsing.lines.margins.split_margin_rows`).
    A text block whose lines stand in aligned columns becomes a table, and a table block takes
    in the header rows right above it (:mod:`ocrstack.parsing.lines.tabular`; the blocks of
    header lines it takes are left out of the result).
    """
    heads: list[Block] = []
    if height is not None:
        lines, heads = split_margin_rows(lines, height, len(blocks))
    owners: dict[int, list[Line]] = {i: [] for i in range(len(blocks))}
    loose: list[Line] = []
    # numbers in tables and figures are cells or labels, not contents entries
    tabular = [b.bbox for b in blocks if b.category in ROW_ORDER]
    inside = {id(ln) for ln in lines if any(covered(ln.bbox, t) >= 0.5 for t in tabular)}
    lines = merge_toc_numbers([ln for ln in lines if id(ln) not in inside]) + [
        ln for ln in lines if id(ln) in inside
    ]
    for ln in lines:
        best, best_key = None, None
        for i, b in enumerate(blocks):
            c = covered(ln.bbox, b.bbox)
            if b.category is Category.FIGURE:
                # a "line" drawn around a picture (rapidocr reads shapes as glyphs) belongs to it
                c = max(c, covered(b.bbox, ln.bbox))
            elif (
                c < 0.5
                and covered(b.bbox, ln.bbox) >= CONTAINED_BLOCK
                and area(ln.bbox) <= (CONTAINED_AREA_RATIO * area(b.bbox))
            ):
                # a tight layout box inside the (padded) line box: a page number
                c = 0.5
            if c >= 0.5:
                key = (round(c, 2), -area(b.bbox))
                if best_key is None or key > best_key:
                    best, best_key = i, key
        if best is None:
            loose.append(ln)
        else:
            owners[best].append(ln)
    promote_title_lines(blocks, owners, lines)
    absorbed = find_tables(blocks, owners, loose)  # text blocks that are tables; header rows
    for i, b in enumerate(blocks):
        if b.category is Category.TITLE and owners[i] and all(ln.toc for ln in owners[i]):
            # en_twocol_ltnews24: the last contents entry, "Improving support for Unicode engines 2"
            b.category = Category.TEXT
            b.warnings.append("title read as text: it is a contents entry ending with its page number")
    content = area(union(ln.bbox for ln in lines)) if lines else 0.0
    for i, b in enumerate(blocks):
        own = owners[i]
        b.text = join_lines(own, columns=b.category not in ROW_ORDER)
        if own and b.category is not Category.FIGURE:
            b.bbox = union([b.bbox, *(ln.bbox for ln in own)])
        table = None
        if (
            own
            and not structured
            and b.category is Category.TABLE
            and area(b.bbox) <= TABLE_MAX_SHARE * content
        ):
            # issue 11 item 3: rows and columns from the lines' geometry (no model)
            table = table_from_lines([(ln.bbox, ln.text) for ln in own], b.bbox)
        if table is not None:
            b.text = table
        elif own and not structured and b.category in FALLBACK_WARNING:
            b.warnings.append(FALLBACK_WARNING[b.category])
    extra = [
        Block(
            bbox=union(ln.bbox for ln in g),
            category=Category.TEXT,
            score=min(ln.score for ln in g),
            order=len(blocks) + len(heads) + k,
            label="recovered",
            text=join_lines(g),
        )
        for k, g in enumerate(group_lines(loose))
    ]
    return [*(b for i, b in enumerate(blocks) if i not in absorbed), *heads, *extra]


#: Fewest single characters that make a stacked label (:func:`stacked_characters`).
STACK_MIN_CHARS = 2


def stacked_characters(lines: list[Line]) -> str | None:
    """The text of a label written as upright characters stacked top to bottom, or None.

    An exam's binding margin (issue 11 item 4) carries its name and seat-number fields as
    upright characters one below the other; the detector finds each character as a line of
    its own, so the block read as "N\nA\nM\nE" (or 姓 / 名 one a line). When a block's lines
    are at least :data:`STACK_MIN_CHARS` single characters, each below the one before (top at
    or below the previous middle), overlapping it horizontally by at least half the narrower
    width, the whole stack taller than wide, the characters are joined top to bottom with no
    separator: ``NAME``, ``姓名``.
    """
    if len(lines) < STACK_MIN_CHARS or any(len(ln.text.strip()) != 1 for ln in lines):
        return None
    ordered = sorted(lines, key=lambda ln: ln.bbox[1])
    for a, b in zip(ordered, ordered[1:], strict=False):
        (ax0, ay0, ax1, ay1), (bx0, by0, bx1, _) = a.bbox, b.bbox
        narrow = min(ax1 - ax0, bx1 - bx0)
        if by0 < (ay0 + ay1) / 2 or min(ax1, bx1) - max(ax0, bx0) < 0.5 * narrow:
            return None
    box = union([ln.bbox for ln in ordered])
    if box[3] - box[1] <= box[2] - box[0]:
        return None
    return "".join(ln.text.strip() for ln in ordered)


def join_lines(lines: list[Line], columns: bool = True) -> str:
    """Order ``lines`` (see :func:`ocrstack.parsing.reading_order.order_lines`) and join them.

    Lines on the same row (overlapping by half a height vertically, the second starting at
    most half a height before the first ends) are joined with a space, rows with a newline.
    With ``columns`` (text blocks; tables and figures are read row by row and keep one newline
    per row) rows are also split into paragraphs, separated by a blank line (issue 10 item 8),
    from the geometry of each column of rows (:func:`paragraph_break`), a table-of-contents
    page number read as a line of its own stays on its entry's row (:func:`merge_toc_numbers`),
    and a label of stacked single characters is one word (:func:`stacked_characters`). Lines
    written at 90, 180 or 270 degrees are read box by box in their own frame and are rows of
    their own (:func:`ocrstack.parsing.lines.rotated.collapse`).
    """
    if not lines:
        return ""
    if columns:
        stack = stacked_characters(lines)
        if stack is not None:
            return stack
        lines = merge_toc_numbers(lines)
    lines = rotated.collapse(lines)
    boxes = [ln.bbox for ln in lines]
    rows: list[tuple[BBox, str]] = []
    toc: set[int] = set()  # rows ending with a table-of-contents page number: each its own paragraph
    alone = False  # the last row is a rotated line: nothing joins it
    for i in order_lines(boxes, columns=columns):
        b = boxes[i]
        turned = rotated.turned(lines[i])
        if rows and not (turned or alone):
            prev = rows[-1][0]
            ov = min(prev[3], b[3]) - max(prev[1], b[1])
            h = min(prev[3] - prev[1], b[3] - b[1])
            # detector boxes are padded: neighbouring words of one row overlap by a few pixels
            if ov >= 0.5 * h and b[0] >= prev[2] - max(2.0, 0.5 * h):
                rows[-1] = (union([prev, b]), f"{rows[-1][1]} {lines[i].text}")
                toc.discard(len(rows) - 1)
                if lines[i].toc:
                    toc.add(len(rows) - 1)
                continue
        rows.append((b, lines[i].text))
        alone = turned
        if lines[i].toc:
            toc.add(len(rows) - 1)
    if not columns:
        return "\n".join(t for _, t in rows)
    lh = median(r[0][3] - r[0][1] for r in rows)
    # runs of rows going down the page; the next row higher up starts a new run (a column)
    runs: list[list[int]] = []
    for k, (bb, _) in enumerate(rows):
        if runs and bb[1] >= rows[k - 1][0][1]:
            runs[-1].append(k)
        else:
            runs.append([k])
    out: list[str] = []
    edges = [(min(rows[k][0][0] for k in run), max(rows[k][0][2] for k in run)) for run in runs]
    for r, run in enumerate(runs):
        left, right = edges[r]
        for n, k in enumerate(run):
            if n:
                brk = k - 1 in toc or paragraph_break(rows[k - 1], rows[k], left, right, lh)
                out.append("\n\n" if brk else "\n")
            elif r:  # column change: only a finished sentence on a short row ends the paragraph
                pr = edges[r - 1][1]
                prev = rows[k - 1]
                out.append(
                    "\n\n" if _ends_short(prev[0], prev[1], pr, lh) or LIST_MARK.match(rows[k][1]) else "\n"
                )
            out.append(rows[k][1])
    return "".join(out)


#: Paragraph geometry (:func:`paragraph_break`), in median row heights of the block: a vertical
#: gap above ``PARA_GAP`` (body leading leaves 0.2-0.5), a first-line indent of at least
#: ``PARA_INDENT`` (1 em is about one row height), and a row ending ``SHORT_ROW`` row heights or
#: more before the column's right edge with sentence punctuation (the last row of a paragraph).
PARA_GAP = 0.8
PARA_INDENT = 1.0
SHORT_ROW = 2.0
#: Sentence-final punctuation, Latin and CJK (full-width), optionally followed by closing quotes
#: or brackets.
SENTENCE_END = re.compile(r"[.!?:;\u3002\uff01\uff1f\uff1a\uff1b][\"'\u201d\u2019)\]\uff09\u300d\u300f]*$")
#: A list item's first row: a bullet glyph, or 1. / 1) / (a) / a) followed by a space.
LIST_MARK = re.compile(r"^\s*(?:[\u2022\u00b7\u25aa\u25cf\u2013\u2014*+-]\s|\(?(?:\d{1,3}|[a-zA-Z])[.)]\s)")
#: A table-of-contents page number: digits or lower-case roman numerals, after optional dot leaders.
TOC_NUMBER = re.compile(r"^[.\u00b7\u2026 ]*(\d{1,4}|[ivxlc]{1,6})$")


def _ends_short(row: BBox, text: str, right: float, lh: float) -> bool:
    return row[2] <= right - SHORT_ROW * lh and bool(SENTENCE_END.search(text.rstrip()))


def paragraph_break(
    prev: tuple[BBox, str], row: tuple[BBox, str], left: float, right: float, lh: float
) -> bool:
    """True when ``row`` (bbox, text) starts a new paragraph after ``prev``, the row above it in
    the same column (``left``/``right``: the column's edges; ``lh``: median row height; pixels).

    A new paragraph: a vertical gap over ``PARA_GAP`` * ``lh``; ``row`` starts a list item
    (:data:`LIST_MARK`); ``row`` indented by at least ``PARA_INDENT`` * ``lh`` while ``prev`` is
    not (and ``prev`` is no list item's first row, whose continuation rows hang indented); or
    ``prev`` ends ``SHORT_ROW`` * ``lh`` before the right edge with sentence punctuation.
    """
    (pb, pt), (rb, rt) = prev, row
    if rb[1] < pb[1] + 0.5 * (pb[3] - pb[1]):  # not below ``prev``: the same row, read in pieces
        return False
    if rb[1] - pb[3] > PARA_GAP * lh or LIST_MARK.match(rt):
        return True
    if rb[0] - left >= PARA_INDENT * lh and pb[0] - left < 0.5 * lh and not LIST_MARK.match(pt):
        return True
    return _ends_short(pb, pt, right, lh)


def _same_row(a: BBox, b: BBox) -> bool:
    return min(a[3], b[3]) - max(a[1], b[1]) >= 0.5 * min(a[3] - a[1], b[3] - b[1])


def merge_toc_numbers(lines: list[Line]) -> list[Line]:
    """Join each line that is only a page number (:data:`TOC_NUMBER`), in a column of at least two
    such numbers with right edges aligned, to the nearest line on its row to its left: a table
    of contents read as two columns (titles, then numbers) otherwise comes out as stray
    page-number lines (issue 10 item 8). The joined line is marked ``toc`` (its row ends a
    paragraph in :func:`join_lines`). A number with a figure (:data:`FIGURE`) after it on its
    row, or whose left neighbour is a figure too or has no letter (a currency sign) and is no
    dot leader, is a cell of a table's row, not a contents entry's page number, and stays
    (issue 22 class 5: a statement's "Sales | 876 | 680" and "$ | 141" were joined). Returns a new list;
    ``lines`` is not changed."""
    nums = [x for x in lines if TOC_NUMBER.match(x.text.strip())]
    # a contents column: at least two numbers whose right edges line up (within a line height)
    nums = [
        x
        for x in nums
        if any(y is not x and abs(y.bbox[2] - x.bbox[2]) <= x.bbox[3] - x.bbox[1] for y in nums)
    ]
    out = list(lines)
    for ln in sorted(nums, key=lambda x: -x.bbox[0]):
        if not any(x is ln for x in out):
            continue  # already joined as the left part of a number further right
        b = ln.bbox
        cands = [x for x in out if x is not ln and x.bbox[2] <= b[0] + 2 and _same_row(x.bbox, b)]
        right = [x for x in lines if x.bbox[0] >= b[2] - 2 and _same_row(x.bbox, b) and FIGURE.match(x.text)]
        if not cands or right:  # a figure after it: a table's row, not a contents entry
            continue
        left = max(cands, key=lambda x: x.bbox[2])
        if FIGURE.match(left.text.strip()) or not re.search(r"[^\W\d_]|^[.\u00b7\u2026 ]+$", left.text):
            continue  # a figure or a sign ("$") before it: a table's row too
        merged = Line(
            union([left.bbox, b]), f"{left.text} {ln.text.strip()}", min(left.score, ln.score), toc=True
        )
        out = [merged if x is left else x for x in out if x is not ln]  # by identity: equal lines repeat
    return out


def group_lines(lines: list[Line]) -> list[list[Line]]:
    """Group loose lines into paragraphs: a line joins a group whose box it overlaps horizontally
    and whose bottom is at most one median line height above it."""
    if not lines:
        return []
    lh = median(ln.bbox[3] - ln.bbox[1] for ln in lines)
    groups: list[list[Line]] = []
    boxes: list[BBox] = []
    for ln in sorted(lines, key=lambda x: (x.bbox[1], x.bbox[0])):
        b = ln.bbox
        for k, gb in enumerate(boxes):
            if min(gb[2], b[2]) > max(gb[0], b[0]) and -lh <= b[1] - gb[3] <= lh:
                groups[k].append(ln)
                boxes[k] = union([gb, b])
                break
        else:
            groups.append([ln])
            boxes.append(b)
    return groups
