"""Row joining on hostile text: long runs of letters (hardening issue, item 1).

The row-end hyphen and compound patterns of :mod:`ocrstack.parsing.assembly.paragraphs` were
retried at every letter of a run, O(n^2): 40,000 letters took 29 s and froze the service. These
inputs (200,000 letters) finish in milliseconds with the fixed patterns and would take over ten
minutes with the old ones; the assertions check that the results are still the expected joins.
"""

from __future__ import annotations

from ocrstack.parsing.assembly.paragraphs import Vocabulary, join_rows

RUN = "a" * 200_000


def test_vocabulary_of_a_long_letter_run_without_hyphen() -> None:
    vocab = Vocabulary.of([RUN, f"{RUN}-", "well-known and " + RUN + "-b"])
    assert "well-known" in vocab.compounds
    assert RUN in vocab.words


def test_row_end_hyphen_after_a_long_run_joins_the_fragment() -> None:
    vocab = Vocabulary.of([])
    assert join_rows(f"x {RUN}-", "bc next", vocab) == f"x {RUN}bc next"
    assert join_rows(RUN, "next", vocab) == f"{RUN}\nnext"


def test_fragment_is_the_whole_letter_run_before_the_hyphen() -> None:
    vocab = Vocabulary.of(["the well-known case"])
    assert join_rows("a well-", "known case", vocab) == "a well-known case"
    assert join_rows("decompres-", "sion of", vocab) == "decompression of"
    assert join_rows("x1ab-", "cd", vocab) == "x1abcd"
