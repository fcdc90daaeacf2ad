"""The ``<!-- page N -->`` page markers of ocrstack Markdown: one writer, one splitter.

``ocrstack parse`` (:mod:`ocrstack.parsing.assembly.markdown`) starts each page's Markdown with
:func:`marker` on a line of its own; :func:`split_pages` finds them again for the post-write
validation (:mod:`ocrstack.parsing.run.validate`) and for ``ocrstack verify``
(:mod:`ocrstack.verifying.outputs`). Page numbers are 1-based.
"""

from __future__ import annotations

import re

#: A page marker alone on its line (trailing blanks allowed); group 1 is the 1-based page number.
PAGE_MARK = re.compile(r"^<!-- page (\d+) -->[ \t]*$", re.MULTILINE)


def marker(page: int) -> str:
    """The marker for 1-based ``page``: ``<!-- page 3 -->``."""
    return f"<!-- page {page} -->"


def split_pages(markdown: str) -> dict[int, str]:
    """``{1-based page: text}``, the text running from the end of a marker line (its newline
    included) to the next marker; text before the first marker is dropped. ``{}`` when the
    Markdown has no markers. A page marked twice keeps its last text.
    """
    marks = list(PAGE_MARK.finditer(markdown))
    out: dict[int, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(markdown)
        out[int(m.group(1))] = markdown[m.end() : end]
    return out
