"""Merge overlapping layout blocks so no region is read twice (issue 3).

rapid-layout returned the same region as two classes (table and equation; text and
reference on en_twocol_ltnews24 page 1); recognising both read the text twice.
"""

from __future__ import annotations

from dataclasses import replace

from ocrstack.parsing.geometry import area, covered, iou, union
from ocrstack.parsing.types import Block

#: Two blocks whose IoU is at least this, or one of which lies this much inside the other
#: with a different class, are one region.
IOU_MERGE = 0.5
CONTAINED_MERGE = 0.8


def merge_overlaps(blocks: list[Block]) -> list[Block]:
    """Return blocks where heavily overlapping ones are merged into one.

    Two blocks merge when IoU >= 0.5, or when they have different categories and the smaller
    lies >= 80% inside the larger (a same-category block inside another, e.g. a title
    inside a text block, is kept: lines go to the smallest covering block). The merged block
    takes the union bbox and the category/label/score of the higher-scoring block; a warning
    records what was merged. Order of the remaining blocks is kept.
    """
    out = [replace(b, warnings=list(b.warnings)) for b in blocks]  # copies every field (rotation too)
    changed = True
    while changed:
        changed = False
        for i in range(len(out)):
            for j in range(i + 1, len(out)):
                a, b = out[i], out[j]
                small, big = (a, b) if area(a.bbox) <= area(b.bbox) else (b, a)
                same = a.category == b.category
                if iou(a.bbox, b.bbox) >= IOU_MERGE or (
                    not same and covered(small.bbox, big.bbox) >= CONTAINED_MERGE
                ):
                    keep, drop = (a, b) if a.score >= b.score else (b, a)
                    keep.bbox = union([a.bbox, b.bbox])
                    keep.order = min(a.order, b.order)
                    keep.warnings.append(
                        f"merged overlapping {drop.category.value} block (score {drop.score:.2f}) into it"
                    )
                    keep.warnings.extend(drop.warnings)
                    out[i] = keep
                    del out[j]
                    changed = True
                    break
            if changed:
                break
    return out
