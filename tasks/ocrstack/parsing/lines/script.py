"""Stray CJK characters on Latin-script pages (issue 22 class 2).

The embedded recognizer's model reads Chinese and English; on an English page it reads a speck,
a logo or a glyph it does not know as a lone Han character (``马`` in an English building note,
``区`` from a logo: 5 of 37 English documents tried). On a page whose recognized letters are
Latin (:data:`LATIN_SHARE`), a Han character standing alone -- no Han, kana or Hangul character
next to it -- is dropped from the blocks the recognizer read, with a warning on the block. Text
from the PDF's own layer is never changed, and pages of any other script are left as they are.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ocrstack.parsing.types import Block

#: Least share of a page's letters that are Latin for the page to count as Latin-script. The
#: English dev pages read by OCR measure 0.99-1.0; a Chinese page with English terms far less.
LATIN_SHARE = 0.95
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
#: A Han character with no CJK character (Han, kana, Hangul) on either side.
_LONE_HAN = re.compile(f"(?<![{_CJK}])[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff](?![{_CJK}])")


def latin_share(texts: Sequence[str]) -> float:
    """Share of the letters in ``texts`` whose Unicode name starts with LATIN (0.0 with none)."""
    letters = [c for t in texts for c in t if c.isalpha()]
    if not letters:
        return 0.0
    return sum(unicodedata.name(c, "").startswith("LATIN") for c in letters) / len(letters)


def drop_stray_han(blocks: Sequence[Block], sources: frozenset[str]) -> int:
    """Remove lone Han characters from the blocks whose ``source`` is in ``sources`` when the
    page (all ``blocks``) is Latin-script; returns how many were removed. Each changed block gets
    a warning naming what was removed."""
    if latin_share([b.text for b in blocks]) < LATIN_SHARE:
        return 0
    removed = 0
    for b in blocks:
        if b.source not in sources or not b.text:
            continue
        found = _LONE_HAN.findall(b.text)
        if not found:
            continue
        text = _LONE_HAN.sub("", b.text)
        b.text = re.sub(r"[ \t]{2,}", " ", text).strip()
        b.warnings.append(f"dropped {len(found)} stray CJK character(s) on a Latin page: {''.join(found)}")
        removed += len(found)
    return removed
