"""What the page stages of :mod:`ocrstack.parsing.stages` pass along for one page (issue 9: one
state object, read and updated in place by each stage)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

from ocrstack.parsing import outputs
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.textlayer.extract import PageText
from ocrstack.parsing.textlayer.soundness import Verdict
from ocrstack.parsing.types import Block, PageImage

__all__ = ["PageState"]


@dataclass
class PageState:
    """What the stages pass along for one page.

    Attributes:
        page: the page image (replaced by ``orient`` when it turns the page).
        paths: where figure crops / overlays go; None writes nothing.
        rotation: degrees turned counter-clockwise by ``orient``.
        blocks: the blocks so far (in reading order after ``order``).
        skipped: paratext blocks set aside by ``paratext`` (not sent to the recognizer).
        result: the page result, made by ``order`` and completed by ``figures``.
        layer: the page's text layer when ``textlayer`` judged it usable, else None.
        verdict: the ``textlayer`` verdict (None before that stage).
        early: (page, future of its layout) started by ``textlayer`` before the OCR sample
            (:meth:`ocrstack.parsing.stages.Parser.start_layout`); ``layout`` uses it when
            ``orient`` left the page as it was.
        blank: set by ``textlayer``: no usable text layer and no ink on the page
            (:mod:`ocrstack.parsing.ink`); ``orient``, ``layout`` and ``recognise`` then do nothing.
        plain: plain text with a sound layer, blocks from the layer (:mod:`ocrstack.parsing.textlayer.plain`).
    """

    page: PageImage
    paths: outputs.OutputPaths | None = None
    rotation: int = 0
    blocks: list[Block] = field(default_factory=list)
    skipped: list[Block] = field(default_factory=list)
    result: PageResult | None = None
    layer: PageText | None = None
    verdict: Verdict | None = None
    early: tuple[PageImage, Future] | None = None
    blank: bool = False
    plain: bool = False
