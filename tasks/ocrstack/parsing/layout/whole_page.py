"""Layout kind ``none``: the whole page is one text block (issue 3, layout providers)."""

from __future__ import annotations

from ocrstack.parsing.engines import LayoutProvider
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.types import Block, Category, PageImage


class WholePage(LayoutProvider):
    """A provider that returns one ``text`` block covering the page; gives no reading order of its own."""

    name = "none"
    gives_order = False

    def detect(self, page: PageImage) -> list[Block]:
        """Return ``[Block((0, 0, width, height), TEXT, score=1.0, order=0, label="page")]``."""
        w, h = page.size
        return [
            Block(
                bbox=(0.0, 0.0, float(w), float(h)), category=Category.TEXT, score=1.0, order=0, label="page"
            )
        ]


def create(options: ParseOptions) -> WholePage:
    """Factory for the registry in :mod:`ocrstack.parsing.layout`; ``options`` is unused."""
    return WholePage()
