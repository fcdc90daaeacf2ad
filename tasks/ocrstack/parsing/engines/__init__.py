"""The engine protocol: base classes for layout providers and recognizers, with a default for
everything the pipeline asks of an engine.

:mod:`ocrstack.parsing.run.pipeline` and :mod:`ocrstack.parsing.outputs` only call these methods and
read these attributes; they never compare engine kinds as strings or look hooks up with
``getattr``. So **adding an engine is one module plus one registry line**:

1. write ``ocrstack/parsing/layout/<kind>.py`` (a :class:`LayoutProvider` subclass) or
   ``ocrstack/parsing/recognition/<kind>/recognizer.py`` (a :class:`Recognizer` subclass; one
   folder per recognizer, its helpers beside it), overriding only what differs from the defaults
   below, with a ``create(options: ParseOptions)`` factory that takes its settings out of the
   options (e.g. ``OpenAIOptions.of(options)``);
2. add ``"<kind>": "<module>:create"`` to ``LAYOUTS`` or ``RECOGNIZERS`` in
   :mod:`ocrstack.parsing.engines.kinds`.

New engine options are declared once in :mod:`ocrstack.parsing.options` (in an
:class:`~ocrstack.parsing.options.EngineOptions` subclass that ``ParseOptions`` inherits); the CLI
flag, validation, HTTP form field and cache key follow from the declaration.

Beside the protocol: :mod:`.kinds` (the kind -> factory tables), :mod:`.registry` (the one lookup
that imports an engine only when chosen) and :mod:`.ov_session` (the OpenVINO runtime that
rapid-layout and rapidocr share).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ocrstack.parsing.types import Block, PageImage


class Engine:
    """What layout providers and recognizers share: name, lifecycle, provenance, cache key."""

    #: The registry kind (shown in blocks.json as ``layout`` / ``recognizer``).
    name: str = ""
    #: True when the work is done by servers (several pages in flight); False for in-process CPU work.
    remote: bool = False
    #: Names of the options (fields of ParseOptions declared ``cache="engine"``) that change this
    #: engine's output and so join the page-cache key when it is used.
    cache_fields: frozenset[str] = frozenset()

    def probe(self) -> Any:
        """Called once before the first page: fail fast on a missing server or model (guide 8).
        Default: nothing to check."""
        return None

    def close(self) -> None:
        """Called at the end of a run (also after errors): free threads, connections, models."""

    def load(self) -> None:
        """Load the models now rather than on the first page that needs them (a run loads only
        what its pages need): for a process that keeps the engine warm across many documents,
        so that its timed pages do not pay a load (the bench's warm runs). Default: nothing."""

    def model_info(self) -> dict[str, str]:
        """Provenance for blocks.json (flat strings; no secrets). Default: nothing beyond the name."""
        return {}


class LayoutProvider(Engine):
    """Finds layout blocks on a page. Implementations live in :mod:`ocrstack.parsing.layout`."""

    #: True when the provider's ``order`` is a reading order to keep (else geometric ordering).
    gives_order: bool = False
    #: True when a page of plain text with a sound text layer may take its blocks from the layer
    #: instead of this provider (:mod:`ocrstack.parsing.textlayer.plain`, issue 21: the embedded
    #: default's model costs more than such a page needs). False: every page goes to ``detect``.
    plain_pages_from_layer: bool = False

    def detect(self, page: PageImage) -> list[Block]:
        """Return blocks with bbox (page pixels), category, score and ``order`` (0-based)."""
        raise NotImplementedError

    def thumbnailer(self) -> Callable[[Any], Any] | None:
        """A function the PDF renderer calls with each page's pixels while it holds them (a
        numpy ``(height, width, 4)`` uint8 view of PDFium's buffer, channels R, G, B and unused;
        valid during the call only); what it returns is kept as the page's
        :attr:`~ocrstack.parsing.types.PageImage.thumbnail` for :meth:`detect` (which must not
        rely on it: a raster input, a turned page or another renderer has none). For a provider
        that first shrinks the page: shrinking the render buffer spares a copy of the whole page.
        Asked once per document. Default: None (no thumbnail)."""
        return None


class Recognizer(Engine):
    """Turns blocks into text. Implementations live in :mod:`ocrstack.parsing.recognition`."""

    #: True when it reads the whole page once and assigns lines to blocks (rapidocr): blocks are
    #: not padded and paratext blocks are still read. False: it reads each block's crop.
    reads_whole_page: bool = False
    #: True when answers are structured (OTSL/HTML tables, LaTeX formulas); False keeps plain OCR
    #: text and the assembly warns about tables/formulas.
    structured: bool = True

    def orient(self, page: PageImage) -> tuple[PageImage, int]:
        """Turn the page upright before layout; return (page, degrees turned). Default: as is."""
        return page, 0

    def recognize(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        """Fill ``text`` (and ``warnings``) of each block; return the blocks in the same order."""
        raise NotImplementedError

    def recognize_only(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        """Recognise just ``blocks`` of a page whose other blocks took the PDF's text layer
        (issue 11); return them, nothing added. Default: :meth:`recognize` (a cropping recognizer
        reads only these blocks anyway); a whole-page reader overrides it to read crops."""
        return self.recognize(page, blocks)[: len(blocks)]

    def read_line_crops(self, crops: list[Any]) -> list[str] | None:
        """Text of single-line crops (PIL images), for the text layer's OCR sample (issue 11).
        None (default): no cheap local read, the sample is skipped."""
        return None

    @property
    def workers(self) -> int:
        """Pages processed at once. Default 1 (in-process work)."""
        return 1

    @property
    def pages_in_flight(self) -> int:
        """Most pages rendered and not yet finished at once (bounds memory). Default 2 x workers,
        so a worker never waits for the renderer."""
        return 2 * self.workers

    def http_clients(self) -> dict[str, Any]:
        """The HTTP client (``httpx.Client``) of each server by base URL, once :meth:`probe` has
        run, for instrumentation (the HTTP service's per-server latency metric). Default: none
        (in-process work)."""
        return {}

    def abort(self) -> None:
        """Stop the work in flight now, from another thread (a cancelled API job, issue 25 item 4):
        requests to servers are cut off and fail. Default: nothing (in-process work stops between
        pages)."""

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per server URL: request counts (``done`` answered, ``failed`` retryable faults, ...).
        Default: none (in-process work)."""
        return {}
