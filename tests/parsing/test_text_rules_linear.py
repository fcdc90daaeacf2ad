"""Every text rule runs in linear time on hostile runs (the hardening issue, item 1).

Each rule of :data:`ocrstack.parsing.textrules.RULES` (the list the security table's row uses
too) is timed, best of 3, on 10^5 and 10^6 characters of each hostile shape of
:data:`~ocrstack.parsing.textrules.SHAPES`; the ratio must stay at most 40 (linear is about 10, a
quadratic rule about 100). A ratio, not a wall-clock bound. The rules of
:data:`~ocrstack.parsing.textrules.SLOW` take seconds per call at 10^6 characters (linearly):
they are the ``hostile`` suite, run only when ``-m`` names it (``nox -s hostile``, about 13
minutes on one core; not in ``.ci/run``), each 10^6 run timed best of 2 (a single timing once
read 25-30 for OTSL on ``lt-amp`` beside a busy neighbour; best of 2 alone: 8.5).
"""

from __future__ import annotations

import pytest

from ocrstack.parsing.textrules import RULES, SHAPES, SLOW, best_of

SMALL, BIG = 10**5, 10**6
#: Linear is about 10; a rule that takes microseconds reads up to about 24 where the 10^6-character
#: string outgrows the CPU caches (born-digital html_cells on backslash-dollar: 0.17 ms vs 3.97 ms,
#: linear from 10^4 to 3 x 10^5); a quadratic rule reads about 100.
LINEAR_RATIO_MAX = 40.0


@pytest.mark.parametrize(
    ("name", "rule"),
    [pytest.param(n, r, id=n, marks=[pytest.mark.hostile] if n in SLOW else []) for n, r in RULES],
)
def test_rule_is_linear_on_hostile_runs(name, rule) -> None:
    slow = []
    for shape, make in SHAPES.items():
        small, big = make(SMALL), make(BIG)
        rule(small)  # warm caches (compiled patterns, imports)
        t_small, t_big = best_of(rule, small), best_of(rule, big, times=2 if name in SLOW else 3)
        ratio = t_big / max(t_small, 1e-6)
        if ratio > LINEAR_RATIO_MAX:
            slow.append(f"{shape}: {t_small * 1000:.1f} ms vs {t_big * 1000:.1f} ms, ratio {ratio:.1f}")
    assert not slow, f"{name} is not linear: " + "; ".join(slow)
