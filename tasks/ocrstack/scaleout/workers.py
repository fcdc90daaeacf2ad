"""What runs on the Ray cluster for ``ocrstack parse --ray``: the page actor.

Plain Python here; :mod:`ocrstack.scaleout.pool` wraps :class:`PageWorker` with ``ray.remote`` (so
this module imports without Ray and its pieces are testable in-process).

The page stages are :class:`ocrstack.parsing.stages.Parser`'s own, run in two parts:
:data:`LAYOUT_STAGES` on a layout actor (which also renders the page: no render task, no worker
process per driver) and :data:`RECOGNITION_STAGES` on the recognition actor (one
OpenAI-compatible client and dispatcher over every server, so ``--concurrency`` per server and the
dispatcher's routing hold cluster-wide) or, for an in-process CPU recognizer, on the same actor.
The same functions on the same inputs give the same blocks as ``ocrstack parse`` without ``--ray``.

An actor outlives a run (``--ray-address``: :mod:`ocrstack.scaleout.pool`, where the pool, its key
and its release are described). It holds the **engines** built from the options it was created
with -- the in-process models (layout model, rapidocr), loaded once per actor -- and one
:class:`Parser` **per run** (:class:`Run`: the run's own options, so DPI, text layer, output and
cache directories are the run's). Server-backed engines (clients, no model) are made per run, as a
local run makes them: their answer cache (under the run's ``--cache-dir`` / ``-o``), server probe
and fault state are the run's own. A kept actor exits by itself after ``ttl`` seconds without a
call (:meth:`PageWorker.expire` shortens that).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.parsing import documents
from ocrstack.parsing import layout as layout_registry
from ocrstack.parsing import recognition as recognition_registry
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.outputs import OutputPaths
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.page_state import PageState
from ocrstack.parsing.stages import STAGES, Parser, Stage
from ocrstack.parsing.types import PageImage

#: Stages run where the layout model is: those not part of recognition (text layer, orient,
#: layout, merge, paratext; ``orient`` needs the recognizer's orientation model, which an
#: in-process recognizer loads lazily on the same actor).
LAYOUT_STAGES = tuple(s for s in STAGES if not s.recognition)
#: Stages run where the recognizer is: those that declare themselves part of recognition.
RECOGNITION_STAGES = tuple(s for s in STAGES if s.recognition)
#: Runs whose Parser an actor keeps at once (a driver that died never ends its run); beyond it the
#: least recently used run's Parser is closed (made again if that run sends another page).
KEPT_RUNS = 16
#: Seconds between an actor's idle checks (the granularity of ``ttl``).
IDLE_CHECK = 1.0


@dataclass(frozen=True)
class Run:
    """One run as the actors see it: ``id`` (unique per run) and the run's options without its
    ``inputs`` (sent with every call, about a kilobyte; an actor builds the run's :class:`Parser`
    at its first call)."""

    id: str
    options: ParseOptions


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


def exit_actor() -> None:
    """End the calling Ray actor (``ray.kill`` of itself: the GCS frees its name at once)."""
    import ray

    ray.kill(ray.get_runtime_context().current_actor)


class PageWorker:
    """A Ray actor: the engines of ``options`` (models load on first use, once per actor process)
    and a :class:`Parser` per :class:`Run` over them.

    Args:
        options: the options the engines are built from (those of the run that created the actor).
        ttl: seconds without a call after which the actor ends itself (``on_idle``); None: never
            (a run's private actor, killed by the run).
        on_idle: what ending is (default :func:`exit_actor`; tests pass another).
    """

    def __init__(
        self, options: ParseOptions, ttl: float | None = None, on_idle: Callable[[], None] = exit_actor
    ) -> None:
        self.engines = Parser(options)
        self._runs: OrderedDict[str, Parser] = OrderedDict()
        self._lock = threading.Lock()
        self._busy = 0
        self._last = time.monotonic()
        #: Runs begun on this actor before the current one (0: a new actor).
        self.runs = 0
        self.ttl = ttl
        self.grace: float | None = None  # set by expire
        if ttl is not None:
            threading.Thread(target=self._watch, args=(on_idle,), daemon=True, name="ocrstack-ttl").start()

    # -- lifetime

    @contextmanager
    def _call(self) -> Iterator[None]:
        with self._lock:
            self._busy += 1
        try:
            yield
        finally:
            with self._lock:
                self._busy -= 1
                self._last = time.monotonic()

    def idle_seconds(self) -> float:
        """Seconds since the last call ended; 0 while one runs."""
        with self._lock:
            return 0.0 if self._busy else time.monotonic() - self._last

    def _watch(self, on_idle: Callable[[], None]) -> None:
        while True:
            time.sleep(IDLE_CHECK)
            if self.expired():
                on_idle()
                return

    def expired(self) -> bool:
        """True when the actor should end: no call for ``ttl`` s, or (after :meth:`expire`) no run
        open here and no call for ``grace`` s."""
        idle = self.idle_seconds()
        with self._lock:
            ttl, grace, open_runs = self.ttl, self.grace, bool(self._runs)
        return (ttl is not None and idle >= ttl) or (grace is not None and not open_runs and idle >= grace)

    def expire(self, seconds: float) -> None:
        """End this actor once no run is open here (begun and not ended: a run in progress keeps
        it however slowly its pages come) and it has had no call for ``seconds``: a pool of other
        settings needs its CPUs. A later :meth:`begin` cancels this."""
        with self._call(), self._lock:
            self.grace = seconds if self.grace is None else min(self.grace, seconds)

    # -- runs

    def _parser(self, run: Run) -> Parser:
        """The run's Parser: the in-process engines shared, server-backed ones made for the run."""
        with self._lock:
            parser = self._runs.get(run.id)
            if parser is not None:
                self._runs.move_to_end(run.id)
                return parser
        o, base = run.options, self.engines
        layout = layout_registry.create(o.layout, o) if base.layout.remote else base.layout
        recognizer = (
            recognition_registry.create(o.recognizer, o) if base.recognizer.remote else base.recognizer
        )
        parser = Parser(o, layout=layout, recognizer=recognizer)
        with self._lock:
            parser = self._runs.setdefault(run.id, parser)  # another thread of the run may have won
            evicted = self._runs.popitem(last=False)[1] if len(self._runs) > KEPT_RUNS else None
        if evicted is not None:
            self._close(evicted)
        return parser

    def _close(self, parser: Parser) -> None:
        """Close a run's own engines (not the shared ones)."""
        if parser.recognizer is not self.engines.recognizer:
            parser.recognizer.close()
        if parser.layout is not self.engines.layout:
            parser.layout.close()

    def begin(self, run: Run, recognizer: bool, ttl: float | None = None) -> dict[str, int]:
        """Start ``run`` here: build its Parser and probe the engines it uses (fail fast, guide 8);
        ``ttl`` replaces the idle limit (a kept actor), and an :meth:`expire` is cancelled.
        Returns ``pid`` and ``runs`` (runs begun here before this one: 0 for a new actor).

        Raises:
            ServerUnreachable / ServerRejected / ConfigError: as the local pipeline's probe.
        """
        with self._call():
            parser = self._parser(run)
            parser.layout.probe()
            if recognizer:
                parser.recognizer.probe()
            with self._lock:
                before, self.runs, self.grace = self.runs, self.runs + 1, None
                if ttl is not None:
                    self.ttl = ttl
            return {"pid": os.getpid(), "runs": before}

    def end(self, run_id: str) -> bool:
        """Drop a finished run's Parser (its own engines closed); True when it was here."""
        with self._call():
            with self._lock:
                parser = self._runs.pop(run_id, None)
            if parser is not None:
                self._close(parser)
            return parser is not None

    # -- pages

    def _stages(self, parser: Parser, state: PageState, stages: tuple[Stage, ...], timings: dict) -> None:
        for stage in stages:
            t = time.perf_counter()
            stage(parser, state)
            timings[stage.name] = time.perf_counter() - t

    def _layout(self, run: Run, source: str, index: int, paths: OutputPaths) -> LaidOut:
        o = run.options
        rendered = render(source, index, o.dpi, o.password, o.max_pixels)
        out = LaidOut(state=PageState(page=rendered.page, paths=paths), timings={"render": rendered.seconds})
        self._stages(self._parser(run), out.state, LAYOUT_STAGES, out.timings)
        return out

    def _recognize(self, run: Run, laid_out: LaidOut) -> PageResult:
        timings = dict(laid_out.timings)
        self._stages(self._parser(run), laid_out.state, RECOGNITION_STAGES, timings)
        result = laid_out.state.result
        assert result is not None
        render_s = timings.pop("render", 0.0)
        result.timings.update(timings)
        result.timings["total"] = sum(timings.values())
        result.timings["render"] = render_s
        return result

    def layout(self, run: Run, source: str, index: int, paths: OutputPaths) -> LaidOut:
        """Render 0-based page ``index`` of ``source`` (the file must be readable on this node, as
        for any Ray worker) and run :data:`LAYOUT_STAGES` on it.

        Raises:
            InputError: the page cannot be rendered (that page fails).
        """
        with self._call():
            return self._layout(run, source, index, paths)

    def recognize(self, run: Run, laid_out: LaidOut) -> PageResult:
        """Run :data:`RECOGNITION_STAGES`; the result's timings hold every stage, ``total``
        (their sum) and ``render``."""
        with self._call():
            return self._recognize(run, laid_out)

    def page(self, run: Run, source: str, index: int, paths: OutputPaths) -> PageResult:
        """Every stage on this actor (in-process CPU recognizers: no second hop for the image)."""
        with self._call():
            return self._recognize(run, self._layout(run, source, index, paths))

    def close(self) -> None:
        """Free the engines (threads, connections, models) and every run's own."""
        with self._lock:
            runs, self._runs = list(self._runs.values()), OrderedDict()
        for parser in runs:
            self._close(parser)
        self.engines.recognizer.close()
        self.engines.layout.close()
