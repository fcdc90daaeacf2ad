"""Reading order: the provider's order when it has one, else a column-aware recursive XY-cut.

rapidocr returns text lines sorted by y across the whole page, which interleaves the
columns of a two- or three-column page (issue 3, measured on en_twocol_ltnews24 and
en_multicol_pari_refcard). The XY-cut here splits at vertical gutters first; when a region
has no gutter it cuts at horizontal gaps and then re-joins consecutive horizontal strips
that share a gutter, so a full-width title followed by two columns reads: title, left
column, right column. Classic XY-cut: Nagy & Seth, "Hierarchical representation of
optically scanned documents" (ICPR 1984).
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from ocrstack.parsing.card_rows import card_rows
from ocrstack.parsing.geometry import covered
from ocrstack.parsing.types import BBox, Block


def _groups(idx: list[int], boxes: Sequence[BBox], axis: int, min_gap: float) -> list[list[int]]:
    """Split ``idx`` at gaps of at least ``min_gap`` pixels in the projection on ``axis`` (0=x, 1=y)."""
    lo, hi = (0, 2) if axis == 0 else (1, 3)
    items = sorted(idx, key=lambda i: (boxes[i][lo], boxes[i][hi]))
    out: list[list[int]] = []
    end = None
    for i in items:
        if end is None or boxes[i][lo] - end >= min_gap and boxes[i][lo] > end:
            out.append([i])
            end = boxes[i][hi]
        else:
            out[-1].append(i)
            end = max(end, boxes[i][hi])
    return out


#: A vertical gutter splits a region into columns only when the region is at least this
#: fraction of the whole content's height, or (block order) when every column is at least
#: MIN_COLUMN_WIDTH of the region's width (see :func:`xy_cut`).
MIN_COLUMN_FRACTION = 0.5
MIN_COLUMN_WIDTH = 0.2


def xy_cut(
    boxes: Sequence[BBox],
    min_gap_x: float = 1.0,
    min_gap_y: float = 0.0,
    min_column_fraction: float = MIN_COLUMN_FRACTION,
    min_column_width: float | None = MIN_COLUMN_WIDTH,
    cell_width: float | None = None,
    blocks: bool = False,
) -> list[int]:
    """Return the indices of ``boxes`` in column-aware reading order.

    Args:
        boxes: (x0, y0, x1, y1) in page pixels.
        min_gap_x: narrowest vertical gutter (pixels) that separates columns.
        min_gap_y: narrowest horizontal gap (pixels) that separates strips.
        min_column_fraction, min_column_width: a gutter only makes columns when the region
            it runs through (one region, or consecutive strips sharing it) is at least
            ``min_column_fraction`` of the height of all ``boxes`` -- a real gutter runs down
            most of the page -- or, for a shorter region, when every column is at least
            ``min_column_width`` of the region's width (None: never). Other side-by-side
            pieces -- the answer choices A-D under each exam question (10-12 % of the width
            each), a table of contents' page numbers -- are read row by row. Block order
            uses both (the two-column middle of odd_rotate90_skewed_scan is 31 % of the page
            height, its columns 45 % of the width); line order inside a block uses only the
            height rule, since side-by-side lines in a short region are table rows (pari
            refcard description/command pairs, the Debian table read on the whole page).
            A single box right above a strip that crosses the gutter is that strip's heading,
            not the end of the column above.
            Measured on the corpus subset (sequence similarity of the default output,
            before -> after, tests/data/accuracy_baseline.json): math_zh_gaokao_exam 0.857 ->
            0.886, tables_zh_debian_reference 0.958 -> 0.988 (with figures read row by row),
            en_twocol_ltnews24 p1 0.981 -> 0.990, booktabs 0.984 -> 0.998, no page lower.
        cell_width: a gutter whose columns include one narrower than this (pixels) whose lines
            nearly all share a row with a line beside them is no column gutter but the cells
            of rows, read row by row (:func:`cells`; None: never). Line order only.
        blocks: the boxes are layout blocks (:func:`order_blocks`): notes in a narrow, mostly
            empty margin beside the text are read where they stand, not as a column first
            (:func:`margin_groups`), a grid of cards is read band by band
            (:func:`ocrstack.parsing.card_rows.card_rows`), and boxes overlapping one above
            the other are read top first, not as one row (:func:`rows` with ``stacked``).
    """
    if not boxes:
        return []
    top = min(b[1] for b in boxes)
    tall_enough = min_column_fraction * (max(b[3] for b in boxes) - top)

    def cols(ix: list[int]) -> list[list[int]]:
        return _groups(ix, boxes, 0, min_gap_x)

    def height(ix: list[int]) -> float:
        return max(boxes[i][3] for i in ix) - min(boxes[i][1] for i in ix)

    def by_rows(ix: list[int]) -> list[int]:
        sub = [boxes[i] for i in ix]
        return [ix[j] for r in rows(sub, stacked=blocks) for j in r]

    def columns(ix: list[int]) -> list[list[int]] | None:
        """The column groups of ``ix`` when its gutter is real (see the docstring), else None."""
        vertical = cols(ix)
        if len(vertical) < 2:
            return None
        if height(ix) >= tall_enough:
            return None if cell_width is not None and cells(boxes, vertical, cell_width) else vertical
        if min_column_width is None:
            return None
        width = max(boxes[i][2] for i in ix) - min(boxes[i][0] for i in ix)
        spans = [max(boxes[i][2] for i in g) - min(boxes[i][0] for i in g) for g in vertical]
        return vertical if min(spans) >= min_column_width * width else None

    def heads(cur: list[int], seg: list[int], nxt: list[int] | None) -> bool:
        """``seg`` is one box right above a strip that crosses the gutter of ``cur`` and
        closer to it than to the column above: that strip's heading (the "Additional
        Features" title of odd_rotate90_skewed_scan), not the end of a column."""
        if nxt is None or len(seg) != 1 or len(cols(cur + seg + nxt)) > 1:
            return False
        b = boxes[seg[0]]
        above = [boxes[i][3] for i in cur if min(boxes[i][2], b[2]) > max(boxes[i][0], b[0])]
        gap_above = b[1] - max(above) if above else float("inf")
        gap_below = min(boxes[i][1] for i in nxt) - b[3]
        # closer to the strip below than to the column above, and less than a line apart
        return gap_below < min(gap_above, b[3] - b[1])

    def rec(ix: list[int]) -> list[int]:
        if len(ix) <= 1:
            return list(ix)
        vertical = columns(ix)
        if vertical is not None and blocks:
            notes = margin_groups(boxes, vertical)
            if notes:
                main = [i for k, g in enumerate(vertical) if k not in notes for i in g]
                side = [i for k in notes for i in vertical[k]]
                return place_notes(boxes, rec(main), side)
        if vertical is not None and blocks:  # a grid of cards: band by band (issue 22 class 7)
            bands = card_rows(boxes, vertical, _groups(ix, boxes, 1, 1.0))
            if bands is not None:
                return [i for b in bands for i in rec(b)]
        if vertical is not None:
            return [i for g in vertical for i in rec(g)]
        strips = sorted(_groups(ix, boxes, 1, min_gap_y), key=lambda g: min(boxes[i][1] for i in g))
        if len(strips) == 1:
            return by_rows(ix)
        # join consecutive strips that share a gutter; a joined group tall enough is a
        # column region, a shorter one is read strip by strip
        groups: list[list[list[int]]] = [[strips[0]]]
        for k, seg in enumerate(strips[1:], start=1):
            cur = [i for st in groups[-1] for i in st]
            nxt = strips[k + 1] if k + 1 < len(strips) else None
            if len(cols(cur)) > 1 and len(cols(cur + seg)) > 1 and not heads(cur, seg, nxt):
                groups[-1].append(seg)
            else:
                groups.append([seg])
        out: list[int] = []
        for g in groups:
            flat = [i for st in g for i in st]
            if len(g) > 1 and columns(flat) is not None:
                out.extend(rec(flat))
            else:
                out.extend(i for st in g for i in (rec(st) if len(st) < len(ix) else by_rows(st)))
        return out

    return rec(list(range(len(boxes))))


#: Two boxes whose horizontal overlap is more than this share of the narrower one's width, and
#: whose middles are more than a quarter of the smaller height apart, are stacked (one above the other,
#: overlapping), not side by side: they never share a row. Measured on libtasn1.pdf page 6 (the
#: full libtasn1 manual, /usr/share/doc/libtasn1-doc, text layer): rapid-layout's box of a bullet
#: list reaches 96 px into the paragraph below it, the two shared a "row" and were read left
#: edge first (paragraph 8 px left of the list), so the list came after the paragraph (order
#: 0.923; 1.000 read top first). Side-by-side cells and words overlap by their detector padding
#: only (a few pixels). A box nested in a larger one is read by its middle too (libtasn1.pdf
#: page 33: the first paragraph's box at the top of a box around the whole section, 0.455 ->
#: 0.996), unless both have the same middle (page 10: option names boxed inside the option
#: table's box, which keep left-to-right order).
STACKED_OVERLAP = 0.5


def _stacked(a: BBox, b: BBox) -> bool:
    ov = min(a[2], b[2]) - max(a[0], b[0])
    apart = abs(a[1] + a[3] - b[1] - b[3]) / 2 > 0.25 * min(a[3] - a[1], b[3] - b[1])
    return apart and ov > STACKED_OVERLAP * min(a[2] - a[0], b[2] - b[0])


def rows(boxes: Sequence[BBox], stacked: bool = False) -> list[list[int]]:
    """Group boxes into rows (vertical overlap >= half the smaller height), top to bottom, left to right.

    With ``stacked`` (layout blocks) a box stacked over one already in the row (see
    :data:`STACKED_OVERLAP`) starts a new row. Not for lines: the axis-aligned boxes of
    diagonal text lines (odd_rotated_text_boxes, read row by row as a figure) overlap like
    stacked blocks, and reading them top first raised that page's CER 0.624 -> 0.652.
    """
    order = sorted(range(len(boxes)), key=lambda i: (boxes[i][1] + boxes[i][3]) / 2)
    out: list[list[int]] = []
    span: tuple[float, float] | None = None
    for i in order:
        b = boxes[i]
        h = b[3] - b[1]
        if span is not None and not (stacked and any(_stacked(boxes[j], b) for j in out[-1])):
            ov = min(span[1], b[3]) - max(span[0], b[1])
            if ov >= 0.5 * min(h, span[1] - span[0]):
                out[-1].append(i)
                span = (min(span[0], b[1]), max(span[1], b[3]))
                continue
        out.append([i])
        span = (b[1], b[3])
    return [sorted(r, key=lambda i: boxes[i][0]) for r in out]


def order_lines(boxes: Sequence[BBox], columns: bool = True) -> list[int]:
    """Order text-line boxes inside one block (or a whole page).

    With ``columns`` the lines go through :func:`xy_cut` with a gutter of at least one median
    line height (measured: the en_twocol_ltnews24 gutter is 1.5 line heights wide) and cells
    narrower than :data:`CELL_WIDTH` line heights (:func:`cells`); without it (tables) see
    :func:`order_table_lines`.
    """
    if not boxes:
        return []
    lh = median(b[3] - b[1] for b in boxes)
    if not columns:
        return order_table_lines(boxes, min_gap_x=2.0 * lh)
    return xy_cut(boxes, min_gap_x=1.0 * lh, min_gap_y=0.0, min_column_width=None, cell_width=CELL_WIDTH * lh)


#: A "table" whose lines fall into 2-4 gutter-separated groups, each at least this many lines
#: and this fraction of the block's width, is read as text columns (see order_table_lines).
TEXT_COLUMN_MIN_LINES = 40
TEXT_COLUMN_MIN_WIDTH = 0.2


def order_table_lines(boxes: Sequence[BBox], min_gap_x: float) -> list[int]:
    """Order the lines of a block labelled table: row by row, unless it is really a few long
    text columns side by side.

    The lines are split at vertical gutters at least ``min_gap_x`` wide. When that gives 2-4
    groups, each with at least ``TEXT_COLUMN_MIN_LINES`` lines and ``TEXT_COLUMN_MIN_WIDTH``
    of the block's width, the groups are read one after the other (each row by row);
    otherwise the whole block is read row by row. Measured: rapid-layout labels the whole
    three-column en_multicol_pari_refcard one table (three groups of ~100 lines, each a third
    of the width); reading rows across its columns gave a word-sequence similarity of 0.31
    against the text layer, column by column 0.97. The corpus tables keep row order
    (booktabs, Google Docs grid: one group; the Chinese Debian reference table: two groups of
    15 and 21 lines, read column-wise at a 15-line limit, similarity 0.90 instead of 0.96 --
    hence 40). Row alignment does not separate the two cases (dense text columns share
    rows by chance as often as table cells do). A real table of 40+ rows in wide columns
    would be read column by column: its words are all kept, only their order differs.
    """
    if not boxes:
        return []
    groups = _groups(list(range(len(boxes))), boxes, 0, min_gap_x)
    width = max(b[2] for b in boxes) - min(b[0] for b in boxes)
    wide = all(
        len(g) >= TEXT_COLUMN_MIN_LINES
        and max(boxes[i][2] for i in g) - min(boxes[i][0] for i in g) >= TEXT_COLUMN_MIN_WIDTH * width
        for g in groups
    )
    if not (2 <= len(groups) <= 4 and wide):
        groups = [list(range(len(boxes)))]
    out: list[int] = []
    for g in groups:
        sub = [boxes[i] for i in g]
        out.extend(g[j] for r in rows(sub) for j in r)
    return out


def order_blocks(blocks: list[Block], provider_order: bool) -> list[Block]:
    """Return ``blocks`` sorted into reading order with ``order`` renumbered 0..n-1.

    When ``provider_order`` is true the blocks the provider ordered keep that order; blocks
    without a provider order (label ``recovered``) are inserted after the last provider block
    that starts above them in the same column. Otherwise :func:`xy_cut` decides (gutters of
    at least 1 pixel between blocks, margin notes read where they stand).
    """
    if not blocks:
        return []
    if provider_order:
        ranked = sorted((b for b in blocks if b.label != "recovered"), key=lambda b: b.order)
        for extra in sorted(
            (b for b in blocks if b.label == "recovered"), key=lambda b: (b.bbox[1], b.bbox[0])
        ):
            pos = 0
            for k, b in enumerate(ranked):
                same_col = min(b.bbox[2], extra.bbox[2]) > max(b.bbox[0], extra.bbox[0])
                if b.bbox[1] <= extra.bbox[1] and (same_col or covered(extra.bbox, b.bbox) > 0):
                    pos = k + 1
            ranked.insert(pos, extra)
        out = ranked
    else:
        idx = xy_cut([b.bbox for b in blocks], blocks=True)
        out = [blocks[i] for i in idx]
    for n, b in enumerate(out):
        b.order = n
    return out


#: Line order: a column of a gutter split narrower than this many median line heights whose
#: lines nearly all (:data:`CELL_PAIRED`) share a row with a line of another column holds cells
#: of rows -- equation numbers, "by (3.24)" notes, the operands of an aligned equation array,
#: option names beside their descriptions, a "[Function]" tag -- not a column of text.
#: Measured (text-layer lines, 200 DPI): such columns are 0.8-11.4 line heights wide and 0.96-1.0
#: paired (math_crc_paper p1 equation array: 4.3 and 4.6 beside 14.8; libtasn1.pdf p8 option
#: names 10.7 beside 22.0 of descriptions;
#: shared-mime-info-spec p9-13 record layouts 0.8-7.8; en_multicol_pari_refcard command column
#: 11.4), real text columns are 22-26 wide and also 0.74-1.0 paired (en_twocol_ltnews24 and
#: the pari refcard read with ``--layout none``; LaTeX aligns baselines across columns), so the
#: width decides and the pairing keeps margin notes (0.67 paired, mathtools) out.
CELL_WIDTH = 15.0
CELL_PAIRED = 0.9


def _same_row(a: BBox, b: BBox) -> bool:
    return min(a[3], b[3]) - max(a[1], b[1]) >= 0.5 * min(a[3] - a[1], b[3] - b[1])


def cells(boxes: Sequence[BBox], groups: list[list[int]], width: float) -> bool:
    """True when one of the gutter-separated ``groups`` of ``boxes`` is narrower than ``width``
    pixels and at least :data:`CELL_PAIRED` of its boxes share a row (vertical overlap of half
    the smaller height) with a box of another group: the groups are cells of rows."""
    for g in groups:
        if max(boxes[i][2] for i in g) - min(boxes[i][0] for i in g) >= width:
            continue
        others = [boxes[j] for h in groups if h is not g for j in h]
        paired = sum(1 for i in g if any(_same_row(boxes[i], o) for o in others))
        if paired >= CELL_PAIRED * len(g):
            return True
    return False


#: Block order: an outer column of a gutter split is a margin of notes when it is at most
#: MARGIN_WIDTH of the region's width and its blocks fill at most MARGIN_FILL of the height of
#: the text beside it. Measured on math_mathtools_doc: the margin notes ("Suggested by Henri
#: Menke 2019/07/08", "Feature request by Lars Madsen ...") are 0.13-0.17 of the width and fill
#: 0.06-0.12 of the text's height; read as a column they came first on the page. Real columns
#: are 0.3-0.5 of the width (en_twocol_ltnews24, en_multicol_pari_refcard,
#: odd_rotate90_skewed_scan) and filled.
MARGIN_WIDTH = 0.25
MARGIN_FILL = 0.5


def margin_groups(boxes: Sequence[BBox], groups: list[list[int]]) -> list[int]:
    """Indices (into ``groups``, left to right) of the outer groups that are margins of notes
    (see :data:`MARGIN_WIDTH`, :data:`MARGIN_FILL`); [] when none, or when every group is."""
    if len(groups) < 2:
        return []
    span = [(min(boxes[i][0] for i in g), max(boxes[i][2] for i in g)) for g in groups]
    width = span[-1][1] - span[0][0]
    out = []
    for k in {0, len(groups) - 1}:
        rest = [i for n, g in enumerate(groups) if n != k for i in g]
        text = max(boxes[i][3] for i in rest) - min(boxes[i][1] for i in rest)
        fill = sum(boxes[i][3] - boxes[i][1] for i in groups[k])
        if span[k][1] - span[k][0] <= MARGIN_WIDTH * width and fill <= MARGIN_FILL * text:
            out.append(k)
    return sorted(out) if len(out) < len(groups) else []


def place_notes(boxes: Sequence[BBox], main: list[int], notes: list[int]) -> list[int]:
    """``main`` (already in reading order) with each margin note read where it stands: before the
    first main box whose top lies below the note's middle. Measured on math_mathtools_doc: the
    text layer has each of its three notes after the first line of the paragraph whose top is
    the first below the note's middle (block order cannot split a paragraph, so the note comes
    right before it; read as a column, the notes came first on the page).

    A vertical label (a box taller than wide: the name and seat-number fields written down an
    exam's binding margin, issue 11 item 4) is page furniture like a footer and is read after
    the main text, not first as a column. No corpus page has such labels; the synthetic case
    is in tests/parsing/test_reading_order.py.
    """
    labels = [i for i in notes if boxes[i][3] - boxes[i][1] > boxes[i][2] - boxes[i][0]]
    at: dict[int, list[int]] = {}
    for i in sorted((i for i in notes if i not in labels), key=lambda i: boxes[i][1]):
        mid = (boxes[i][1] + boxes[i][3]) / 2
        pos = next((k for k, j in enumerate(main) if boxes[j][1] >= mid), len(main))
        at.setdefault(pos, []).append(i)
    out = [i for k, j in enumerate(main) for i in (*at.get(k, []), j)] + at.get(len(main), [])
    return out + sorted(labels, key=lambda i: (boxes[i][0], boxes[i][1]))
