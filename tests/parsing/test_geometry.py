"""Box helpers (ocrstack.parsing.geometry) and the text layer's same-line test: written-out min and
max give the values of the builtins, on random boxes with ties, empty and inverted boxes."""

from __future__ import annotations

import math
import random

from ocrstack.parsing.geometry import area, covered, intersection
from ocrstack.parsing.textlayer import lines


def _boxes(seed: int, n: int):
    rnd = random.Random(seed)
    for _ in range(n):
        v = [rnd.choice([float(rnd.randint(-5, 20)), rnd.uniform(-5, 20)]) for _ in range(8)]
        yield tuple(v[:4]), tuple(v[4:])


def _same(x: float, y: float) -> bool:
    return x == y and math.copysign(1, x) == math.copysign(1, y)


def test_area_and_intersection_are_the_builtin_min_max_formulas():
    for a, b in _boxes(0, 50_000):
        assert _same(area(a), max(0.0, a[2] - a[0]) * max(0.0, a[3] - a[1]))
        w = min(a[2], b[2]) - max(a[0], b[0])
        h = min(a[3], b[3]) - max(a[1], b[1])
        assert _same(intersection(a, b), w * h if w > 0 and h > 0 else 0.0)
    assert covered((0, 0, 10, 10), (5, 0, 20, 20)) == 0.5 and area((3, 3, 1, 9)) == 0.0


def test_same_line_is_the_builtin_min_max_rule():
    def rule(prev, c):
        h = min(prev[3] - prev[1], c[3] - c[1])
        w = min(prev[2] - prev[0], c[2] - c[0])
        if h > 0 and min(prev[3], c[3]) - max(prev[1], c[1]) >= lines.SAME_LINE_OVERLAP * h:
            return max(c[0] - prev[2], prev[0] - c[2]) <= lines.MAX_GAP * max(prev[3] - prev[1], c[3] - c[1])
        if w > 0 and min(prev[2], c[2]) - max(prev[0], c[0]) >= lines.SAME_LINE_OVERLAP * w:
            return max(c[1] - prev[3], prev[1] - c[3]) <= lines.MAX_GAP * max(prev[2] - prev[0], c[2] - c[0])
        return False

    seen = set()
    for a, b in _boxes(1, 50_000):
        for p, c in ((a, b), (a, (a[2] + 1, a[1], a[2] + 9, a[3])), (a, (a[0], a[3] + 1, a[2], a[3] + 30))):
            got = lines._same_line(p, c)
            assert got == rule(p, c)
            seen.add(got)
    assert seen == {True, False}
