"""Text accuracy measures against a PDF's text layer (issue 3, "Real input").

* :func:`tokens`: words for recall -- runs of Latin letters/digits (lower-cased) and every
  CJK character on its own (Chinese has no spaces; one character = one token);
* :func:`word_recall`: multiset recall of the truth tokens in the output tokens (order-free);
* :func:`cer`: character error rate, Levenshtein distance / truth length, over NFKC text with
  all whitespace removed (line breaks and spacing are not errors);
* :func:`sequence_similarity`: :class:`difflib.SequenceMatcher` ratio of the two token lists
  -- order-aware, so interleaved columns score low even when every word is present.

The text layer (``NAME.txt`` beside a corpus PDF, pages split by form feed) is truth for
the words, not for formulas (corpus README).
"""

from __future__ import annotations

import difflib
import html
import re
import unicodedata
from collections import Counter

import numpy as np

_TOKEN = re.compile(r"[0-9A-Za-z\u00C0-\u024F]+|[\u3400-\u9FFF\uF900-\uFAFF]")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_TAGS = re.compile(r"</?(table|tr|td|th|thead|tbody)\b[^>]*>", re.IGNORECASE)


def normalise(text: str) -> str:
    """NFKC-normalise (full-width forms, ligatures like 'fi' -> 'fi')."""
    return unicodedata.normalize("NFKC", text)


def tokens(text: str) -> list[str]:
    """Latin/digit words lower-cased and single CJK characters, in reading order."""
    return [t.lower() for t in _TOKEN.findall(normalise(text))]


def markdown_text(markdown: str) -> str:
    """Plain text of ocrstack Markdown: comments, image links, table tags, escapes and ``#`` removed."""
    text = _COMMENT.sub(" ", markdown)
    text = _IMAGE.sub(" ", text)
    text = _TAGS.sub(" ", text)
    text = re.sub(r"^#+\s", "", text, flags=re.MULTILINE)
    text = text.replace("$$", " ")
    text = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)  # backslash escapes (CommonMark 2.4)
    return html.unescape(text)


def word_hits(truth: str, output: str, exclude: str = "") -> tuple[int, int]:
    """(truth tokens found in the output, truth tokens), both as multisets.

    ``exclude``: text whose tokens are taken out of the truth first (multiset difference),
    e.g. a page's running head and page number when only the content is measured.
    """
    t = Counter(tokens(truth)) - Counter(tokens(exclude))
    o = Counter(tokens(output))
    return sum(min(n, o[w]) for w, n in t.items()), sum(t.values())


def word_recall(truth: str, output: str, exclude: str = "") -> float:
    """Fraction of truth tokens (as a multiset) found in the output; 1.0 when truth has none.
    ``exclude`` as in :func:`word_hits`."""
    found, total = word_hits(truth, output, exclude)
    return found / total if total else 1.0


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert/delete/substitute cost 1), row-vectorised with numpy: O(len(a)*len(b))."""
    if not a:
        return len(b)
    if not b:
        return len(a)
    bv = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    idx = np.arange(len(b) + 1, dtype=np.int64)
    prev = idx.copy()
    for i, ch in enumerate(a.encode("utf-32-le").decode("utf-32-le"), start=1):
        sub = prev[:-1] + (bv != ord(ch))
        cur = np.empty_like(prev)
        cur[0] = i
        cur[1:] = np.minimum(sub, prev[1:] + 1)
        # insertions: cur[j] = min(cur[j], cur[j-1] + 1) == cummin(cur - j) + j
        cur = np.minimum.accumulate(cur - idx) + idx
        prev = cur
    return int(prev[-1])


def cer(truth: str, output: str) -> float:
    """Character error rate: Levenshtein(truth, output) / len(truth), whitespace removed, NFKC."""
    t = "".join(normalise(truth).split())
    o = "".join(normalise(output).split())
    return levenshtein(t, o) / max(1, len(t))


def sequence_similarity(truth: str, output: str) -> float:
    """difflib ratio (0..1) of the token lists: 1.0 = same words in the same order."""
    return difflib.SequenceMatcher(None, tokens(truth), tokens(output), autojunk=False).ratio()
