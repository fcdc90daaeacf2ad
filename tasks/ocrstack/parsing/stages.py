"""One page, processed as an explicit list of stages (guide 5; issue 9).

A stage is an object with one call signature, ``stage(parser, state)``: it reads and updates the
page's :class:`PageState`, and asks ``parser`` (the run's :class:`Parser`: options and engines)
what it needs. :data:`STAGES` lists them in the order they run, and only there:
``textlayer`` (the PDF's own text is read and judged, :mod:`ocrstack.parsing.textlayer`;
``--text-layer``; a page with no usable layer and no ink is blank, :mod:`ocrstack.parsing.ink`,
and the stages after it do nothing for it), ``orient`` (the recognizer turns the page upright;
skipped when the text layer is used: PDFium renders the page as its /Rotate says), ``layout``
(the provider finds blocks), ``merge`` (overlapping blocks merged; blocks padded for a cropping
recognizer), ``paratext`` (header/footer/page-number blocks set aside when they would be
dropped anyway), ``recognise``
(text per block: from the text layer where it is sound, the rest from the recognizer; each block's
``source`` says which), ``order`` (reading order; empty blocks flagged), ``figures`` (figure crops
and layout overlays written).

Each stage declares its :attr:`~Stage.name` (its key under the page's ``timings`` in blocks.json)
and whether it is part of :attr:`~Stage.recognition` (scale-out runs those where the recognizer
is, the others where the layout model is: :mod:`ocrstack.scaleout.workers`).
:meth:`Parser.parse_page` runs every stage and records its seconds (with ``total``; the pipeline
adds ``render``). On a PDF page with ``--text-layer auto|on`` and an in-process layout model, the
layout runs on a second thread from the moment the page's objects call for it
(:func:`~ocrstack.parsing.textlayer.plain.objects_reason`: an image, a form, a drawing, a table's
rules): first thing when the renderer read them (:meth:`Parser.objects_reader`), else beside the
reading of the layer's characters; otherwise once the layer is read, beside the OCR sample;
``layout`` then records the wait. A plain-text page with a sound layer takes its blocks from the
layer, no model (issue 21; :mod:`ocrstack.parsing.textlayer.plain`, where the provider allows it).

Every engine question goes through the protocol of :mod:`ocrstack.parsing.engines` (no kind
strings, no ``getattr`` hooks).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from ocrstack.parsing import documents, ink, outputs
from ocrstack.parsing import layout as layout_registry
from ocrstack.parsing import recognition as recognition_registry
from ocrstack.parsing.engines import LayoutProvider, Recognizer
from ocrstack.parsing.geometry import clip, pad
from ocrstack.parsing.layout.merge import merge_overlaps
from ocrstack.parsing.lines.script import drop_stray_han
from ocrstack.parsing.lines.titles import promote_title_headers
from ocrstack.parsing.options import ParseOptions, TextLayerMode, validate
from ocrstack.parsing.page_result import SKIPPED_PARATEXT, PageResult
from ocrstack.parsing.page_state import PageState
from ocrstack.parsing.reading_order import order_blocks
from ocrstack.parsing.textlayer import pictures, plain
from ocrstack.parsing.textlayer import stage as textlayer
from ocrstack.parsing.textlayer.extract import PageText, page_objects
from ocrstack.parsing.types import Category, PageImage

#: Padding (pixels at 200 DPI, scaled with DPI) around figure crops so edges are whole.
FIGURE_PAD = 8
#: Padding (pixels at 200 DPI, scaled with DPI) added to every block before a cropping
#: recognizer (openai) reads it: 6 px = 0.76 mm, about a quarter of a 10 pt line, enough for
#: ascenders/descenders a tight box cuts, too little to take in a neighbouring line.
CROP_PAD = 6


class Parser:
    """Holds the layout provider and recognizer for a run; :meth:`parse_page` is usable on its own."""

    #: threads for the layout started beside the text-layer stage (made on first use)
    _pool: ThreadPoolExecutor | None = None
    _checked: textlayer.CheckedFonts | None = None
    _pool_lock = threading.Lock()

    def __init__(
        self,
        options: ParseOptions,
        *,
        recognizer: Recognizer | None = None,
        layout: LayoutProvider | None = None,
    ) -> None:
        """Validate ``options`` and build the engines it names. The injection point: an engine
        given as ``recognizer`` or ``layout`` is used instead of the registry's (engines built
        once and reused by the HTTP service, bench variants, fakes in tests); nothing is loaded
        for it. Subclasses call this too: it sets up all of a parser's state.

        Raises:
            UsageError: an option out of range or an unknown engine kind.
        """
        validate(options)
        self.options = options
        if layout is None:
            layout = layout_registry.create(options.layout, options)
        if recognizer is None:
            recognizer = recognition_registry.create(options.recognizer, options)
        self.layout: LayoutProvider = layout
        self.recognizer: Recognizer = recognizer

    @property
    def checked_fonts(self) -> textlayer.CheckedFonts:
        """Fonts whose text layer agreed with the OCR sample, per document (made on first use)."""
        with self._pool_lock:
            if self._checked is None:
                self._checked = textlayer.CheckedFonts()
            return self._checked

    @property
    def workers(self) -> int:
        """Pages processed at once (the recognizer's :attr:`~ocrstack.parsing.engines.Recognizer.workers`)."""
        return max(1, self.recognizer.workers)

    @property
    def pages_in_flight(self) -> int:
        """Most pages rendered and not finished at once (the recognizer's, at least :attr:`workers`)."""
        return max(self.workers, self.recognizer.pages_in_flight)

    def cache_fields(self) -> frozenset[str]:
        """Options that change the engines' output (their page-cache key contribution)."""
        return self.layout.cache_fields | self.recognizer.cache_fields

    def model_info(self) -> dict[str, str]:
        """Provenance for blocks.json: which models produced the blocks."""
        info = {"layout": self.layout.name, "recognizer": self.recognizer.name}
        info.update({f"layout_{k}": v for k, v in self.layout.model_info().items()})
        info.update({f"recognizer_{k}": v for k, v in self.recognizer.model_info().items()})
        return info

    def parse_page(self, page: PageImage, paths: outputs.OutputPaths | None = None) -> PageResult:
        """Run the :data:`STAGES` on one page (:meth:`checkpoint` before each); seconds per stage
        go to ``result.timings``. Figure crops (and overlays with ``save_layout_images``) are
        written under ``paths.files_dir`` when ``paths`` is given."""
        state = PageState(page=page, paths=paths)
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        for stage in STAGES:
            self.checkpoint()
            t = time.perf_counter()
            stage(self, state)
            timings[stage.name] = time.perf_counter() - t
        assert state.result is not None
        state.result.timings.update(timings)
        state.result.timings["total"] = time.perf_counter() - t0
        return state.result

    def checkpoint(self) -> None:
        """Called before each stage of :meth:`parse_page`; a subclass raises here to stop the page
        (the HTTP service's cancelled job, :mod:`ocrstack.api.worker`). Default: nothing."""

    def objects_reader(self) -> Callable[[Any, Any, tuple[int, int]], Any] | None:
        """For the renderer (:func:`ocrstack.parsing.documents.iter_pages`): the text layer's object
        reader (:func:`~ocrstack.parsing.textlayer.extract.page_objects`) when a PDF page's objects
        may start its layout model (``--text-layer auto|on``, an in-process model that takes
        plain pages from the layer), else None."""
        if self.options.text_layer == TextLayerMode.OFF or self.layout.remote:
            return None
        return page_objects if self.layout.plain_pages_from_layer else None

    def start_layout(self, s: PageState) -> None:
        """Start the layout of ``s.page`` on another core (a PDF page, ``--text-layer auto|on``, an
        in-process model; the caller checks the page has ink): it does not need the text layer, so
        it runs beside the OCR sample; with the layer judged sound ``orient`` leaves the page as it is."""
        if self.options.text_layer != TextLayerMode.OFF and s.page.dpi is not None and not self.layout.remote:
            s.early = (s.page, self._layout_pool().submit(self.layout.detect, s.page))

    def _layout_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="ocrstack-layout")
            return self._pool


class Stage(ABC):
    """One step of a page: ``stage(parser, state)`` reads and updates ``state`` in place."""

    #: the key of the stage's seconds under the page's ``timings`` in blocks.json
    name: ClassVar[str]
    #: True for the stages from reading the blocks' text on (a suffix of :data:`STAGES`):
    #: scale-out runs them where the recognizer is, the others where the layout model is
    recognition: ClassVar[bool] = False

    @abstractmethod
    def __call__(self, parser: Parser, s: PageState) -> None:
        """Run the stage on the page of ``s`` with ``parser``'s options and engines."""


class TextLayer(Stage):
    """Read the PDF's own text and judge it; a sound layer is kept in ``s.layer``."""

    name = "textlayer"

    def __call__(self, parser: Parser, s: PageState) -> None:
        mode = parser.options.text_layer
        dpi = s.page.dpi or 72.0
        from_layer = parser.layout.plain_pages_from_layer
        if s.page.objects is not None and plain.objects_reason(s.page.objects, dpi) is not None:
            # the renderer read the page's objects and they call for the layout (a figure, a
            # table's rules): start it now, beside everything below (the ink test included: a
            # page found blank gets no blocks from it, see Layout)
            parser.start_layout(s)
        grey = ink.grey(s.page.image)  # once per page: ink, the layout started early, blank, vouching
        inked = ink.has_ink(grey)

        def objects_read(pt: PageText) -> None:
            # the page's objects already call for the layout: start it beside the reading of the
            # characters
            if inked and s.early is None and (not from_layer or plain.objects_reason(pt, dpi) is not None):
                parser.start_layout(s)

        layer, verdict = textlayer.read_page(s.page, mode, parser.options.password, objects_read)
        s.plain = bool(
            layer is not None
            and verdict.sound
            and from_layer
            and plain.plain_reason(layer, verdict, dpi) is None
        )
        if not s.plain and inked and s.early is None:
            parser.start_layout(s)
        if layer is not None and verdict.sound and mode == TextLayerMode.AUTO:
            memo = parser.checked_fonts
            key = memo.key(s.page)
            checked = memo.get(key)
            # words that read as language and ink where the layer puts them spare the OCR sample
            # (and loading the recognizer); fonts vouched for count as checked for the document
            found = textlayer.vouch_page(layer, grey, checked)
            memo.add(key, found.fonts)
            if found.note is not None:
                verdict = dataclasses.replace(verdict, sample_note=found.note)
            else:
                verdict, agreed = textlayer.check_sample(
                    layer,
                    verdict,
                    parser.recognizer.read_line_crops,
                    s.page.image,
                    checked=checked | found.fonts,
                )
                memo.add(key, agreed)
        s.layer, s.verdict = (layer if verdict.sound else None), verdict
        if s.layer is None and not inked:
            s.blank = True
            s.page = dataclasses.replace(s.page, notes=(*s.page.notes, ink.BLANK_NOTE))
        s.plain = s.plain and s.layer is not None


class Orient(Stage):
    """Turn the page upright (the recognizer's call); not when the text layer is used."""

    name = "orient"

    def __call__(self, parser: Parser, s: PageState) -> None:
        if s.layer is None and not s.blank:
            s.page, s.rotation = parser.recognizer.orient(s.page)


class Layout(Stage):
    """Find the page's blocks: from the text layer on a plain page (:mod:`~ocrstack.parsing.textlayer.plain`),
    else the layout started early when the page was not turned, else the layout provider."""

    name = "layout"

    def __call__(self, parser: Parser, s: PageState) -> None:
        early, s.early = s.early, None
        if s.blank:
            s.blocks = []
        elif s.plain and s.layer is not None:  # plain text: the layer gives the blocks, no model
            s.blocks = plain.layer_blocks(s.layer)
        elif early is not None and early[0] is s.page:
            s.blocks = early[1].result()
        else:
            s.blocks = parser.layout.detect(s.page)


class Merge(Stage):
    """Merge overlapping blocks; pad every block for a recognizer that reads crops."""

    name = "merge"

    def __call__(self, parser: Parser, s: PageState) -> None:
        s.blocks = merge_overlaps(s.blocks)
        if not parser.recognizer.reads_whole_page:
            # the recognizer reads crops: grow each block so glyphs cut by a tight layout box
            # are whole (issue 3: rapid-layout crops cut through glyphs)
            margin = CROP_PAD * (s.page.dpi or 200) / 200
            for b in s.blocks:
                b.bbox = pad(b.bbox, margin, s.page.size)


class Paratext(Stage):
    """Promote a title-size header; set aside paratext blocks a crop reader need not read."""

    name = "paratext"

    def __call__(self, parser: Parser, s: PageState) -> None:
        # a header block of title-size ink high on page 1 is the title, whatever the recognizer
        promote_title_headers(s.blocks, s.page.image, s.page.index)
        if parser.recognizer.reads_whole_page or parser.options.keep_paratext:
            return
        # assembly drops header/footer/page-number blocks unless --keep-paratext: do not
        # spend a server request on each of them (review of issue 3), unless they are all the
        # page's text (assembly keeps that; issue 10 item 7)
        drop = [b.category.is_paratext or b.category is Category.ABANDON for b in s.blocks]
        if all(d or b.category is Category.FIGURE for b, d in zip(s.blocks, drop, strict=True)):
            return
        s.skipped = [b for b, d in zip(s.blocks, drop, strict=True) if d]
        s.blocks = [b for b, d in zip(s.blocks, drop, strict=True) if not d]
        for b in s.skipped:
            b.warnings.append(f"{SKIPPED_PARATEXT}: not sent to the recognizer (--keep-paratext reads it)")


class Recognize(Stage):
    """Give every block its text: from a sound text layer where it has glyphs, else the recognizer."""

    #: the timing key blocks.json has always carried (readers of ``timings`` rely on it)
    name = "recognise"
    recognition = True

    def __call__(self, parser: Parser, s: PageState) -> None:
        options, recognizer = parser.options, parser.recognizer
        if s.blank:
            return
        if s.layer is not None and s.verdict is not None:
            hidden = options.text_layer == TextLayerMode.ON
            layer_args = (s.page, s.blocks, s.layer, s.verdict, options.password)
            structured = recognizer.structured
            filled, rest = textlayer.fill_blocks(*layer_args, accept_hidden=hidden, structured=structured)
            read = textlayer.recognize_rest(s.page, rest, recognizer, s.layer, accept_hidden=hidden)
            pictures.read_pictures(s.page, filled, s.layer, recognizer)  # text only in a picture
            s.blocks = filled + read + s.skipped
            drop_stray_han(s.blocks, frozenset({textlayer.SOURCE_OCR}))
            return
        read = recognizer.recognize(s.page, s.blocks)
        source = textlayer.SOURCE_SERVER if recognizer.remote else textlayer.SOURCE_OCR
        for b in read:
            b.source = source
        s.blocks = read + s.skipped
        drop_stray_han(s.blocks, frozenset({textlayer.SOURCE_OCR}))


class Order(Stage):
    """Put the blocks in reading order, flag empty ones and make the page result."""

    name = "order"
    recognition = True

    def __call__(self, parser: Parser, s: PageState) -> None:
        s.blocks = order_blocks(s.blocks, provider_order=parser.layout.gives_order)
        for b in s.blocks:
            if (
                not b.text.strip()
                and b.category is not Category.FIGURE
                and not any(b is k for k in s.skipped)
            ):
                b.warnings.append("empty: the recognizer returned no text for this block")
        s.result = PageResult(
            index=s.page.index,
            size=s.page.size,
            dpi=documents.image_dpi(s.page),
            rotation=s.rotation,
            blocks=s.blocks,
            structured=parser.recognizer.structured,
            notes=list(s.page.notes),
            text_layer=s.verdict.to_json() if s.verdict is not None else None,
        )


class Figures(Stage):
    """Write figure crops (and with ``save_layout_images`` the layout overlay) under ``s.paths``."""

    name = "figures"
    recognition = True

    def __call__(self, parser: Parser, s: PageState) -> None:
        if s.paths is None or s.result is None:
            return
        page, paths = s.page, s.paths
        scale = (page.dpi or 200) / 200
        for b in s.blocks:
            if b.category is Category.FIGURE:
                box = pad(clip(b.bbox, page.size), FIGURE_PAD * scale, page.size)
                if box[2] - box[0] >= 2 and box[3] - box[1] >= 2:
                    target = paths.figure(page.index, b.order)
                    outputs.atomic_save_image(target, page.image.crop(tuple(round(v) for v in box)))
                    s.result.images[b.order] = paths.relative(target)
        if parser.options.save_layout_images:
            outputs.atomic_save_image(paths.overlay(page.index), outputs.draw_overlay(page.image, s.blocks))


#: The page stages in the order they run: the one list (:meth:`Parser.parse_page`, scale-out).
STAGES: tuple[Stage, ...] = (
    TextLayer(),
    Orient(),
    Layout(),
    Merge(),
    Paratext(),
    Recognize(),
    Order(),
    Figures(),
)
