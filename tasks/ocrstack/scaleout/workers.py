"""What runs on the Ray cluster for ``ocrstack parse --ray``: page rendering and the page actor.

Plain Python here; :mod:`ocrstack.scaleout.executor` wraps them with ``ray.remote`` (so this
module imports without Ray and its pieces are testable in-process).

The page stages are :class:`ocrstack.parsing.stages.Parser`'s own, run in two parts:
:data:`LAYOUT_STAGES` on a layout actor (the layout model loaded once per actor) and
:data:`RECOGNITION_STAGES` on the recognition actor (one OpenAI-compatible client and dispatcher
over every server, so ``--concurrency`` per server and the dispatcher's routing hold cluster-wide)
or, for an in-process CPU recognizer, on the same actor. The same functions on the same inputs
give the same blocks as ``ocrstack parse`` without ``--ray``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.parsing import documents
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.outputs import OutputPaths
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.stages import STAGES, PageState, Parser, Stage
from ocrstack.parsing.types import PageImage

#: Stages run where the layout model is: those not part of recognition (text layer, orient,
#: layout, merge, paratext; ``orient`` needs the recognizer's orientation model, which an
#: in-process recognizer loads lazily on the same actor).
LAYOUT_STAGES = tuple(s for s in STAGES if not s.recognition)
#: Stages run where the recognizer is: those that declare themselves part of recognition.
RECOGNITION_STAGES = tuple(s for s in STAGES if s.recognition)


@dataclass
class Rendered:
    """A rendered page and the seconds rendering took (``timings["render"]`` in blocks.json)."""

    page: PageImage
    seconds: float


@dataclass
class LaidOut:
    """A page after :data:`LAYOUT_STAGES`: the stage state plus the seconds so far."""

    state: PageState
    timings: dict[str, float] = field(default_factory=dict)


def render(source: str, index: int, dpi: int, password: str | None, max_pixels: int) -> Rendered:
    """Render 0-based page ``index`` of ``source`` exactly as the local pipeline does
    (:func:`ocrstack.parsing.documents.iter_pages` with the same DPI and pixel budget).

    Raises:
        InputError: the file cannot be read or rendered (the page fails, the others go on).
    """
    t = time.perf_counter()
    pages = documents.iter_pages(
        Path(source), pages=str(index + 1), dpi=dpi, password=password, max_pixels=max_pixels
    )
    try:
        page = next(pages)
    finally:
        pages.close()
    return Rendered(page=page, seconds=time.perf_counter() - t)


class PageWorker:
    """A Ray actor holding one :class:`Parser` (engines built from ``options``; their models load
    on first use, once per actor process, and again after Ray restarts the actor)."""

    def __init__(self, options: ParseOptions) -> None:
        self.parser = Parser(options)

    def start(self, recognizer: bool) -> int:
        """Probe the engines this actor uses (fail fast, guide 8); return the actor's pid.

        Raises:
            ServerUnreachable / ServerRejected / ConfigError: as the local pipeline's probe.
        """
        self.parser.layout.probe()
        if recognizer:
            self.parser.recognizer.probe()
        return os.getpid()

    def _run(self, state: PageState, stages: tuple[Stage, ...], timings: dict[str, float]) -> None:
        for stage in stages:
            t = time.perf_counter()
            stage(self.parser, state)
            timings[stage.name] = time.perf_counter() - t

    def layout(self, rendered: Rendered, paths: OutputPaths) -> LaidOut:
        """Run :data:`LAYOUT_STAGES` on a rendered page."""
        out = LaidOut(state=PageState(page=rendered.page, paths=paths), timings={"render": rendered.seconds})
        self._run(out.state, LAYOUT_STAGES, out.timings)
        return out

    def recognize(self, laid_out: LaidOut) -> PageResult:
        """Run :data:`RECOGNITION_STAGES`; the result's timings hold every stage, ``total``
        (their sum) and ``render``."""
        timings = dict(laid_out.timings)
        self._run(laid_out.state, RECOGNITION_STAGES, timings)
        result = laid_out.state.result
        assert result is not None
        render_s = timings.pop("render", 0.0)
        result.timings.update(timings)
        result.timings["total"] = sum(timings.values())
        result.timings["render"] = render_s
        return result

    def page(self, rendered: Rendered, paths: OutputPaths) -> PageResult:
        """Every stage on this actor (in-process CPU recognizers: no second hop for the image)."""
        return self.recognize(self.layout(rendered, paths))

    def close(self) -> None:
        """Free the engines (threads, connections, models)."""
        self.parser.recognizer.close()
        self.parser.layout.close()
