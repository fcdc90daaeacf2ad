"""Recognised text lines and their assignment to layout blocks (whole-page readers).

Used by the ``rapidocr`` recognizer (:mod:`ocrstack.parsing.recognition.rapidocr`), which reads
the whole page once, and by the PDF text layer, whose words become lines: every line goes to
exactly one layout block, lines no block covers become ``recovered`` blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from ocrstack.parsing.geometry import area, covered, union
from ocrstack.parsing.reading_order import order_lines
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
#: A header block whose lines are this many times the page's median line height is a title
#: (see :func:`promote_title_headers`).
TITLE_HEIGHT_RATIO = 1.5

FALLBACK_WARNING = {
    Category.TABLE: "table read as plain OCR text: rapidocr recognises no table structure "
    "(use --recognizer openai with an OTSL-capable model for HTML tables)",
    Category.FORMULA: "formula read as plain OCR text: rapidocr produces no LaTeX "
    "(use --recognizer openai for $$...$$ formulas)",
}


@dataclass
class Line:
    """One recognised text line: axis-aligned ``bbox`` in page pixels, ``text``, ``score`` 0..1.

    ``vertical``: the detected box was taller than wide (text runs top-bottom);
    ``flipped``: the 180-degree reading scored higher than the upright one.
    """

    bbox: BBox
    text: str
    score: float
    vertical: bool = False
    flipped: bool = False
    #: slope of the detected box's top edge, degrees, image coordinates (y down): positive =
    #: the line descends to the right
    angle: float = 0.0


def assign_lines(blocks: list[Block], lines: list[Line], structured: bool = False) -> list[Block]:
    """Give every line to exactly one block and set the blocks' text (nothing is read twice).

    A line goes to the block covering the largest fraction of it (at least 0.5); on a tie
    the smaller block wins (a title inside a text block keeps its own line). A figure also
    takes a line whose box holds at least half of the figure (tables_googledocs_grid: the
    picture of a snake came back as one "line" reading "2", larger than the figure box). Text-bearing
    blocks grow to contain their lines so crops and overlays show whole glyphs. Lines no
    block covers are grouped into ``recovered`` TEXT blocks (issue 3: 17% of the bzip2
    manual's lines fell outside every rapid-layout block).
    """
    owners: dict[int, list[Line]] = {i: [] for i in range(len(blocks))}
    loose: list[Line] = []
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
    promote_title_headers(blocks, owners, lines)
    for i, b in enumerate(blocks):
        own = owners[i]
        b.text = join_lines(own, columns=b.category not in ROW_ORDER)
        if own and b.category is not Category.FIGURE:
            b.bbox = union([b.bbox, *(ln.bbox for ln in own)])
        if own and not structured and b.category in FALLBACK_WARNING:
            b.warnings.append(FALLBACK_WARNING[b.category])
    extra = [
        Block(
            bbox=union(ln.bbox for ln in g),
            category=Category.TEXT,
            score=min(ln.score for ln in g),
            order=len(blocks) + k,
            label="recovered",
            text=join_lines(g),
        )
        for k, g in enumerate(group_lines(loose))
    ]
    return [*blocks, *extra]


def promote_title_headers(blocks: list[Block], owners: dict[int, list[Line]], lines: list[Line]) -> None:
    """Turn ``header`` blocks that are really a title back into content, in place.

    rapid-layout labels the masthead of en_twocol_ltnews24 ("LaTeX News" / "Issue 24,
    February 2016") and the title of en_multicol_pari_refcard ("Pari-GP reference card")
    ``header``, and assembly drops headers. Running heads are set at or below body size
    (every header of the corpus pages: 0.9-1.2x the page's median line height), those titles
    at 1.7-2.4x. So a header block whose own lines' median height is at least
    ``TITLE_HEIGHT_RATIO`` times the page's median line height becomes a TITLE, and header
    blocks stacked right under it (vertical gap at most one median line height, overlapping
    horizontally: the masthead's subtitle) become TEXT. Each changed block gets a warning.
    """
    heights = [ln.bbox[3] - ln.bbox[1] for ln in lines]
    if not heights:
        return
    lh = median(heights)
    promoted: list[Block] = []
    for i, b in sorted(enumerate(blocks), key=lambda t: t[1].bbox[1]):
        if b.category is not Category.HEADER or not owners[i]:
            continue
        own_h = median(ln.bbox[3] - ln.bbox[1] for ln in owners[i])
        if own_h >= TITLE_HEIGHT_RATIO * lh:
            b.category = Category.TITLE
            b.warnings.append(
                f"header block with title-size text ({own_h / lh:.1f}x the body line height) kept as a title"
            )
            promoted.append(b)
        elif any(
            0 <= b.bbox[1] - p.bbox[3] <= lh and min(b.bbox[2], p.bbox[2]) > max(b.bbox[0], p.bbox[0])
            for p in promoted
        ):
            b.category = Category.TEXT
            b.warnings.append("header block right under a title-size header kept as text (title block)")
            promoted.append(b)


def join_lines(lines: list[Line], columns: bool = True) -> str:
    """Order ``lines`` (see :func:`ocrstack.parsing.reading_order.order_lines`) and join them.

    Lines on the same row are joined with a space, rows with a newline.
    """
    if not lines:
        return ""
    boxes = [ln.bbox for ln in lines]
    idx = order_lines(boxes, columns=columns)
    out: list[str] = []
    prev: BBox | None = None
    for i in idx:
        b = boxes[i]
        if prev is not None:
            ov = min(prev[3], b[3]) - max(prev[1], b[1])
            same_row = ov >= 0.5 * min(prev[3] - prev[1], b[3] - b[1]) and b[0] >= prev[2] - 2
            out.append(" " if same_row else "\n")
        out.append(lines[i].text)
        prev = b
    return "".join(out)


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
