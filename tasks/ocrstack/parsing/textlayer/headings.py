"""Section headings the layout model read as text, found from the text layer's fonts.

rapid-layout labels some headings ``text``: on en_twocol_ltnews24 page 1 "LuaTEX support"
and "Contents" (LMSans12-Oblique, the font of the page's titled sections, e.g. "Unicode
data") came out as plain paragraphs, so the Markdown lost the section they open. The text
layer names each character's font (:attr:`~ocrstack.parsing.textlayer.extract.Char.font`), so a
one-line text block set in the fonts of a block the layout model did label a title, and in none
of the fonts of the page's body text, is a title too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ocrstack.parsing.geometry import covered
from ocrstack.parsing.lines.assign import Line
from ocrstack.parsing.types import Block, Category

#: Longest heading promoted (characters): a section title, not a sentence.
MAX_CHARS = 80
#: A line ending with one of these is a sentence or a lead-in, not a heading.
SENTENCE_END = (".", ",", ";", ":")


def _body_font(lines: Sequence[Line], fonts: Sequence[frozenset[str]]) -> str | None:
    """The font most of the page's characters are set in (lines of one font only)."""
    count: Counter[str] = Counter()
    for ln, f in zip(lines, fonts, strict=True):
        if len(f) == 1:
            count[next(iter(f))] += len(ln.text)
    return count.most_common(1)[0][0] if count else None


def promote(blocks: Sequence[Block], lines: Sequence[Line], fonts: Sequence[frozenset[str]]) -> None:
    """Relabel, in place, each TEXT block that is a heading in the fonts of the page's titles.

    ``lines`` are the page's text-layer lines, ``fonts`` the fonts of each
    (:func:`~ocrstack.parsing.textlayer.lines.build_lines` ``fonts_out``). A TEXT block becomes
    a TITLE, with a warning, when exactly one line lies in it (half its box at least), that
    line has a letter, at most :data:`MAX_CHARS` characters and no :data:`SENTENCE_END`, and its
    fonts are exactly those of the one-line TITLE blocks of the page and do not include the
    body font (the font of most characters). Nothing changes on a page without such a title.
    """
    body = _body_font(lines, fonts)

    def own(b: Block) -> list[int]:
        return [i for i, ln in enumerate(lines) if covered(ln.bbox, b.bbox) >= 0.5]

    title_fonts = set()
    for b in blocks:
        if b.category is Category.TITLE and len(mine := own(b)) == 1:
            title_fonts.add(fonts[mine[0]])
    title_fonts = {f for f in title_fonts if body not in f}
    if not title_fonts:
        return
    for b in blocks:
        if b.category is not Category.TEXT or len(mine := own(b)) != 1:
            continue
        text = lines[mine[0]].text.strip()
        if (
            fonts[mine[0]] in title_fonts
            and len(text) <= MAX_CHARS
            and any(ch.isalpha() for ch in text)
            and not text.endswith(SENTENCE_END)
        ):
            b.category = Category.TITLE
            b.warnings.append("text read as a title: one line in the font of the page's titles")
