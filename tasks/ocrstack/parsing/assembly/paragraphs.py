"""Readable paragraphs from recognised block text (issue 10 item 8).

A block's text comes with one row per line and a blank line between its paragraphs
(:func:`ocrstack.parsing.lines.assign.join_lines` decides the breaks from line geometry; a
cropping recognizer's answer keeps its own blank lines). Here the rows of one paragraph are
joined for Markdown:

* Latin end-of-line hyphenation is undone when the word goes on in lowercase ("decompres-" /
  "sion" -> "decompression"), unless the hyphen is part of a real compound
  (:func:`join_hyphen`: the hyphenated form occurs elsewhere in the document, or the first part
  is one of :data:`COMPOUND_HEADS` and the closed form occurs nowhere);
* CJK rows are joined without anything between them (a newline renders as a space);
* other rows stay soft-wrapped (one source line each, one paragraph when rendered).

A paragraph starting with a list mark is a list item, and a paragraph cut by a column or page
break is joined to the next when it does not end with sentence punctuation and the next starts
in lowercase (:func:`continues`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ocrstack.parsing.lines.assign import LIST_MARK, SENTENCE_END

#: First parts of English compounds that keep their hyphen (Chicago Manual of Style, 17th ed.,
#: 7.89 hyphenation guide: "all-", "cross-", "ex-", "half-", "quasi-", "self-" compounds are
#: hyphenated; "ill-" and "well-" before a noun). Used only when the document itself does not
#: settle the case (see :func:`join_hyphen`).
COMPOUND_HEADS = frozenset({"all", "cross", "ex", "half", "ill", "quasi", "self", "well"})
#: CJK ideographs, kana, CJK punctuation and full-width forms (Hangul is left out: Korean
#: separates words with spaces).
_CJK = "\u2e80-\u2fff\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
CJK_END = re.compile(f"[{_CJK}]$")
CJK_START = re.compile(f"^[{_CJK}]")
#: A row ending in a hyphenated word fragment (letters, then a hyphen or soft hyphen).
#: Every word pattern that can fail after a run of letters
#: starts only where a run of letters starts (the look-behind): without it ``search``/``findall``
#: retried the match at every letter of a long run, O(n^2) (40,000 letters took 29 s and held the
#: GIL of the whole service; the hardening issue's item 1). Same matches as before.
_HYPHEN_END = re.compile(r"(?<![^\W\d_])([^\W\d_]+)[-\u2010\u00ad]$")
_WORD_START = re.compile(r"^([^\W\d_]+)")
_COMPOUND = re.compile(r"(?<![^\W\d_])[^\W\d_]+(?:-[^\W\d_]+)+")
_WORD = re.compile(r"[^\W\d_]+")
_BULLET = re.compile(r"^\s*[\u2022\u00b7\u25aa\u25cf\u2013\u2014*+-]\s+")
_FIRST_ALNUM = re.compile(r"[^\W_]")
_NUMBERED = re.compile(r"^\s*(\d{1,3})[.)]\s+")


@dataclass
class Vocabulary:
    """Words of a document (lowercase), for :func:`join_hyphen`: ``words`` every word, ``compounds``
    the hyphenated words that occur inside a row (not split at a row end)."""

    words: set[str] = field(default_factory=set)
    compounds: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, texts: Iterable[str]) -> Vocabulary:
        """The vocabulary of ``texts`` (block texts, rows separated by newlines)."""
        v = cls()
        for text in texts:
            for row in text.splitlines():
                row = _HYPHEN_END.sub(r"\1", row.rstrip())  # a row-end fragment is no compound
                v.compounds.update(m.lower() for m in _COMPOUND.findall(row))
                v.words.update(m.lower() for m in _WORD.findall(row))
        return v


def join_hyphen(head: str, tail: str, vocab: Vocabulary) -> str:
    """Join the word fragment ``head`` (before a row-end hyphen) and ``tail`` (the next row's
    first word, lowercase): ``head + tail`` ("decompres" + "sion"), or ``head-tail`` for a real
    compound: when ``head-tail`` occurs elsewhere in the document ("well-known" written on one
    row), or when ``head`` is one of :data:`COMPOUND_HEADS` and ``head + tail`` occurs nowhere in
    the document."""
    key = f"{head}-{tail}".lower()
    if key in vocab.compounds:
        return f"{head}-{tail}"
    if head.lower() in COMPOUND_HEADS and f"{head}{tail}".lower() not in vocab.words:
        return f"{head}-{tail}"
    return head + tail


def join_rows(a: str, b: str, vocab: Vocabulary) -> str:
    """Join two consecutive rows of one paragraph (see the module docstring)."""
    a, b = a.rstrip(), b.lstrip()
    m, w = _HYPHEN_END.search(a), _WORD_START.match(b)
    if m and w and w.group(1)[0].islower():
        return a[: m.start()] + join_hyphen(m.group(1), w.group(1), vocab) + b[w.end() :]
    if m and b and b[0].isalnum():  # "UTF-" / "8", "pre-" / "Christmas": the hyphen stays, no space
        return a + b
    if CJK_END.search(a) and CJK_START.search(b):
        return a + b
    return f"{a}\n{b}"


def join_paragraph(rows: list[str], vocab: Vocabulary) -> str:
    """Join the rows of one paragraph with :func:`join_rows`."""
    out = ""
    for row in rows:
        if row.strip():
            out = join_rows(out, row, vocab) if out else row.strip()
    return out


def paragraphs(text: str) -> list[list[str]]:
    """Split a block's text into paragraphs (blank-line separated), each a list of rows."""
    return [p.splitlines() for p in re.split(r"\n[ \t]*\n", text.strip()) if p.strip()]


def continues(prev: str, nxt: str) -> bool:
    """True when paragraph ``nxt`` goes on from ``prev`` (both raw text): ``prev`` does not end with
    sentence punctuation (:data:`~ocrstack.parsing.lines.assign.SENTENCE_END`) and ``nxt``
    starts with a lowercase letter (its first letter or digit, after any punctuation such as a
    backslash or an opening bracket); list items never continue."""
    prev, nxt = prev.rstrip(), nxt.lstrip()
    if not prev or not nxt or LIST_MARK.match(nxt) or SENTENCE_END.search(prev):
        return False
    first = _FIRST_ALNUM.search(nxt)  # "\\write18 syntax", "(not part of": the letter decides
    return bool(first) and first.group(0).isalpha() and first.group(0).islower()


def list_item(text: str) -> tuple[str, str] | None:
    """(Markdown list marker, item text) when ``text`` starts with a list mark: a bullet glyph
    becomes ``-``, ``3.`` / ``3)`` stays numbered (``3.``); other marks give None."""
    m = _BULLET.match(text)
    if m:
        return "-", text[m.end() :]
    m = _NUMBERED.match(text)
    if m:
        return f"{m.group(1)}.", text[m.end() :]
    return None
