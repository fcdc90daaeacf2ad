"""Whether a block labelled title reads as a heading (issue 22 class 8).

The layout model and the text layer's font rule promote equations and sentences to headings
(``## MulWordByXpowD k, vk(x)) = ...``, ``## bzcat (or bzip2 -dc) decompresses all ...``). A
heading is short and is not a sentence or a formula: :func:`heading_like` says no to text with an
equals sign or a comparison, to more than :data:`MAX_WORDS` words, and to a sentence of more than
:data:`SENTENCE_WORDS` words ending with a full stop. Such a block is written as a paragraph.
"""

from __future__ import annotations

import re

#: Words above which a title block is not a heading (section headings of the dev corpus and the
#: olmOCR sample: at most 14 words).
MAX_WORDS = 16
#: A title block of more words than this that ends with a full stop is a sentence.
SENTENCE_WORDS = 8
_FORMULA = re.compile(r"[=<>≤≥≠]")
_NUMBERED = re.compile(r"^(\d+(\.\d+)*|[A-Z]|[IVX]+)\.?\s")


def heading_like(text: str) -> bool:
    """True when ``text`` can stand as a heading (see the module docstring)."""
    words = text.split()
    if not words or len(words) > MAX_WORDS or _FORMULA.search(text):
        return False
    body = _NUMBERED.sub("", text.strip())
    return not (body.endswith(".") and len(words) > SENTENCE_WORDS)
