"""The ``--pages`` selection: 1-based page ranges like ``1-3,7`` to 0-based page indices."""

from __future__ import annotations

from pathlib import Path

from ocrstack.core.errors import UsageError


def parse_page_range(spec: str | None, n_pages: int, *, source: Path | str | None = None) -> list[int]:
    """Parse a 1-based page selection into sorted, unique 0-based page indices.

    ``spec`` is a comma-separated list of ``N`` (one page), ``A-B`` (inclusive range) or
    ``A-`` (page A to the last page), e.g. ``"1-3,7"`` -> ``[0, 1, 2, 6]``. Whitespace is
    ignored. ``None`` selects all ``n_pages`` pages. ``source`` (optional) is the input the
    selection applies to; error messages name it.

    Raises:
        UsageError: malformed spec, page 0, a reversed range, or a page beyond ``n_pages``;
            the message shows the accepted form.
    """
    if spec is None:
        return list(range(n_pages))
    fix = (
        f"{'this input has' if source is None else str(source) + ' has'} {n_pages} page(s); "
        "select 1-based pages like --pages 1-3,7 (2- = page 2 to the end)"
    )
    text = "".join(spec.split())
    if not text:
        raise UsageError("empty page selection", fix)
    selected: set[int] = set()
    for token in text.split(","):
        first, dash, last = token.partition("-")
        try:
            start = int(first)
            end = (int(last) if last else n_pages) if dash else start
        except ValueError:
            raise UsageError(f"malformed page selection '{spec}' (bad part '{token}')", fix) from None
        if not first.isdigit() or (last and not last.isdigit()):
            raise UsageError(f"malformed page selection '{spec}' (bad part '{token}')", fix)
        if start < 1:
            raise UsageError(f"invalid page range '{token}' in '{spec}' (pages start at 1)", fix)
        if max(start, end) > n_pages:  # the first page past the end is the one named
            beyond = start if start > n_pages else end
            raise UsageError(f"page {beyond} in '{spec}' is beyond the last page ({n_pages})", fix)
        if end < start:
            raise UsageError(f"invalid page range '{token}' in '{spec}' (reversed)", fix)
        selected.update(range(start - 1, end))
    return sorted(selected)
