"""Typed data exchanged between the parse stages (loading -> layout -> recognition -> assembly).

The engine protocol (layout providers, recognizers) is in :mod:`ocrstack.parsing.engines`.

Coordinates are page pixels of the rendered page image, origin top-left,
``bbox = (x0, y0, x1, y1)`` with ``x0 < x1`` and ``y0 < y1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type only: building the CLI parser does not import Pillow
    from PIL import Image


class Category(str, Enum):
    """The normalised layout-block label set every layout provider maps into."""

    TITLE = "title"
    TEXT = "text"
    LIST = "list"
    TABLE = "table"
    FORMULA = "formula"
    FIGURE = "figure"
    CAPTION = "caption"
    HEADER = "header"
    FOOTER = "footer"
    PAGE_NUMBER = "page-number"
    FOOTNOTE = "footnote"
    REFERENCE = "reference"
    ABANDON = "abandon"

    @property
    def is_paratext(self) -> bool:
        """Header, footer and page number: dropped from Markdown unless --keep-paratext."""
        return self in (Category.HEADER, Category.FOOTER, Category.PAGE_NUMBER)


BBox = tuple[float, float, float, float]
"""(x0, y0, x1, y1) in page pixels."""


@dataclass(frozen=True)
class Thumbnail:
    """What the layout provider's thumbnailer (:meth:`~ocrstack.parsing.engines.LayoutProvider.thumbnailer`)
    made of a page while the renderer still held its pixels: ``pixels`` (a numpy array, the
    provider's own shape and meaning) and ``of``, the ``id`` of the :attr:`PageImage.image` they
    were made from (a page turned or replaced has another image, and its thumbnail no longer
    applies: :meth:`PageImage.thumbnail_for`)."""

    of: int
    pixels: Any


@dataclass(frozen=True)
class PageImage:
    """One rendered page.

    Attributes:
        source: the input file path as given (resolved against the cwd).
        index: 0-based page (or TIFF frame) index within ``source``.
        image: RGB image, white background, size (width, height) in pixels.
        dpi: render resolution for PDFs (72 pt = 1 inch); None for raster inputs.
        source_sha256: sha256 of the input file, used for the resume cache key.
        notes: messages about the page (downscaled, rotated, ...), copied into the report.
        thumbnail: made by the renderer for the layout provider (:class:`Thumbnail`), or None.
        objects: what the renderer's objects reader made of the page while it held it (the text
            layer's image, path and form objects,
            :func:`ocrstack.parsing.textlayer.extract.page_objects`), or None.
    """

    source: str
    index: int
    image: Image.Image
    dpi: float | None
    source_sha256: str
    notes: tuple[str, ...] = ()
    thumbnail: Thumbnail | None = field(default=None, compare=False, repr=False)
    objects: Any = field(default=None, compare=False, repr=False)

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        return self.image.size

    def thumbnail_for(self) -> Any:
        """:attr:`thumbnail`'s pixels when they were made from this page's :attr:`image`, else None."""
        t = self.thumbnail
        return t.pixels if t is not None and t.of == id(self.image) else None


@dataclass
class Block:
    """One layout block: bbox in page pixels, normalised category, detector score, reading-order index.

    ``text`` is filled by recognition; ``warnings`` collects per-block problems
    (empty output, fallback used) that end up in the report. ``rotation``: degrees the block's
    crop is turned counter-clockwise (``PIL.Image.rotate``, expand) before a cropping recognizer
    reads it; set by layout ``vlm`` from MinerU-Diffusion's rotation tags (issue 14), else 0.
    ``error``: why recognition of this block failed after its retries (issue 10: the block is
    marked failed in blocks.json and the Markdown, its page and document are partial, a rerun
    retries it); None when it was read.
    ``source``: which path produced ``text`` -- ``text-layer`` (the PDF's own text),
    ``ocr`` (an in-process recognizer) or ``server`` (a remote one); set by the page stages
    (issue 11 item 5).
    """

    bbox: BBox
    category: Category
    score: float = 1.0
    order: int = 0
    label: str = ""
    text: str = ""
    warnings: list[str] = field(default_factory=list)
    rotation: int = 0
    error: str | None = None
    source: str = ""
