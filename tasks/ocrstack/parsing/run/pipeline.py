"""Orchestration of ``ocrstack parse``: load -> orient -> layout -> merge -> recognise -> order
-> assemble -> write -> validate, one input after another, pages streamed (issue 3).

Pages are rendered lazily by :func:`ocrstack.parsing.documents.iter_pages` in this thread (PDFium
is not thread-safe) and processed by a small thread pool of the recognizer's ``workers`` (one
for the embedded CPU recognizer, ``concurrency x servers`` for openai), with at most its
``pages_in_flight`` (twice that) rendered at once so memory stays bounded. Finished pages go to
the resume cache before anything else, so an interrupted run loses at most the pages in flight.

A progress bar (tqdm, on stderr) shows pages done, pages/s and failures, drawn once a page is
under way: an up-front error (a bad option or input, an output held by another run) is printed
alone (:class:`~ocrstack.parsing.run.progress.Progress`).

Options are validated once, at the start of :func:`run` (every caller: CLI, bench, tests, the HTTP
API). One page is processed by :class:`ocrstack.parsing.stages.Parser` as a list of stages; every
engine question (remote?, workers, probe, close, model info, cache-key fields) goes through the
protocol of :mod:`ocrstack.parsing.engines`.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from ocrstack.core import memory
from ocrstack.core.errors import (
    InputError,
    OcrstackError,
    UsageError,
)
from ocrstack.core.results import Report
from ocrstack.parsing import documents, outputs, page_cache
from ocrstack.parsing.assembly.markdown import render_document
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.options import validate as validate_options
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.run import batch, doclock, interrupts, outcomes
from ocrstack.parsing.run.outcomes import DocumentSummary, RunSummary
from ocrstack.parsing.run.progress import Progress
from ocrstack.parsing.run.validate import validate
from ocrstack.parsing.run.work import FATAL, DocumentWork, PageExecutor
from ocrstack.parsing.stages import Parser
from ocrstack.parsing.types import PageImage

#: Problems of one document (unreadable, --pages beyond its end, output held or made from
#: another input): with several inputs they fail that document only (issue 10).
DOCUMENT_ERRORS = (InputError, UsageError)


def _timed(it: Iterator[PageImage]) -> Iterator[tuple[PageImage, float]]:
    while True:
        t = time.perf_counter()
        try:
            page = next(it)
        except StopIteration:
            return
        yield page, time.perf_counter() - t


def run(
    options: ParseOptions,
    progress: bool = True,
    echo: Callable[[str], None] | None = None,
    parser: Parser | None = None,
    executor: PageExecutor | None = None,
) -> RunSummary:
    """Parse every input of ``options``; write NAME.md and NAME.blocks.json per input into
    ``options.output``, and for several inputs ``ocrstack-report.json`` (:mod:`.outcomes`).

    Like ``make``: an input whose finished output matches its sha256, the settings and the page
    selection is reported "up to date" and skipped; an interrupted one resumes from the page
    cache; each document is done under its own lock (:mod:`ocrstack.parsing.run.doclock`), so a
    second run into the same ``-o`` waits (``--lock-timeout``) instead of doing the work twice.
    With several inputs a bad document (unreadable, ``--pages`` beyond its end, held by another
    run, an output made from another input) becomes that document's failure and the others go
    on. ``parser`` replaces the providers built from ``options`` (tests, benchmarks, the HTTP
    service); ``echo`` receives the lines said while the run waits (another run's lock; default:
    stderr). ``executor`` computes the pages elsewhere (``--ray``:
    :class:`ocrstack.scaleout.RayExecutor`); cache, assembly and outputs stay here.

    Returns:
        The run's outcome (:class:`~ocrstack.parsing.run.outcomes.RunSummary`), whatever the status of
        its documents: failed pages, blocks or validation are data, not exceptions (the caller
        prints :meth:`~RunSummary.lines` and maps :meth:`~RunSummary.error` to its exit code).

    Raises:
        InputError / UsageError: bad input or option before any page is parsed (a malformed
            or out-of-range option, an -o that is a file or not writable); with one input also
            its own problems (unreadable, --pages beyond its end, a finished output from another
            input or settings without --force, :class:`OutputLocked`).
        ServerUnreachable / ServerRejected / ConfigError: stop the run at once.
        KeyboardInterrupt: Ctrl-C (finished pages are in the page cache; see
            :mod:`ocrstack.parsing.run.interrupts`).
    """
    start = time.perf_counter()
    say = echo or (lambda s: print(s, file=sys.stderr))
    validate_options(options)
    memory.return_large_buffers()  # page buffers freed go back to the system (before the threads)
    out_dir = Path(options.output).absolute()
    files = batch.without_outputs(documents.expand_inputs(options.inputs), options.inputs, out_dir)
    names = outputs.output_names(files)
    single = len(files) == 1
    done = RunSummary(single=single)
    plans = []
    # option values first (page ranges), then the output directory, then existing outputs:
    # an existing output must not hide a bad option
    for f in files:
        paths = outputs.OutputPaths(out_dir, names[f])
        try:
            plans.append((f, paths, batch.selected(f, options)))
        except DOCUMENT_ERRORS as exc:
            if single:
                raise
            done.documents.append(DocumentSummary(source=f, markdown=paths.markdown, error=exc))
    outputs.ensure_output_dir(out_dir)
    parser = parser or Parser(options)
    settings_values = page_cache.settings(options, parser.cache_fields())
    key = page_cache.settings_hash(settings_values)
    todo = []
    for f, paths, sel in plans:
        try:
            fresh = batch.up_to_date(f, paths, sel, options.force, key)
        except DOCUMENT_ERRORS as exc:
            if single:
                raise
            fresh = DocumentSummary(source=f, markdown=paths.markdown, error=exc)
        if fresh is None:
            todo.append((f, paths, sel))
        else:
            done.documents.append(fresh)
    try:
        with interrupts.sigint_guard():
            _parse_all(parser, todo, done, settings_values, key, single, say, progress, executor)
    except BaseException as exc:
        _sort(done, files)
        stopped = "interrupted" if isinstance(exc, KeyboardInterrupt) else type(exc).__name__
        if not single:
            outcomes.write_report(out_dir, done, stopped=stopped)
        raise
    _sort(done, files)
    if not single:  # one input: its NAME.blocks.json says it all
        done.report = outcomes.write_report(out_dir, done)
    done.seconds = time.perf_counter() - start
    return done


def _sort(done: RunSummary, files: list[Path]) -> None:
    order = {f: n for n, f in enumerate(files)}
    done.documents.sort(key=lambda d: order.get(d.source, len(order)))


def _parse_all(
    parser: Parser,
    todo: list,
    done: RunSummary,
    settings_values: dict,
    key: str,
    single: bool,
    say: Callable[[str], None],
    progress: bool,
    executor: PageExecutor | None,
) -> None:
    """Parse the documents of ``todo``, each under its lock; append their summaries to ``done``."""
    if not todo:
        return
    options = parser.options
    parser.layout.probe()
    parser.recognizer.probe()
    # drawn at the first page under way, not here: a lock refusal or an input that cannot be
    # decoded (found when its first page is rendered) must not follow an empty bar
    bar = Progress(sum(len(sel) for _, _, sel in todo), enabled=progress)

    def failed(f: Path, paths: outputs.OutputPaths, exc: OcrstackError) -> None:
        if single:
            raise exc
        done.documents.append(DocumentSummary(source=f, markdown=paths.markdown, error=exc))

    try:
        with contextlib.ExitStack() as held:
            ready = []
            for f, paths, sel in todo:
                try:
                    with contextlib.ExitStack() as lock:
                        # an executor computes all documents at once: their locks are held until the end
                        (held if executor is not None else lock).enter_context(
                            doclock.hold(paths, options.lock_timeout, say)
                        )
                        # checked again under the lock: another run may have finished it meanwhile
                        fresh = batch.up_to_date(f, paths, sel, options.force, key)
                        if fresh is not None:
                            bar.update(len(sel))
                            done.documents.append(fresh)
                        elif executor is not None:
                            ready.append((f, paths, sel))
                        else:
                            doc = _run_document(parser, f, paths, sel, settings_values, key, bar)
                            done.documents.append(doc)
                except DOCUMENT_ERRORS as exc:
                    failed(f, paths, exc)
            if executor is not None and ready:
                done.documents.extend(_run_with(executor, parser, ready, settings_values, key, bar))
    finally:
        bar.close()
        if not (interrupts.STOP.is_set() and interrupts.busy_workers()):
            parser.recognizer.close()  # else a page in flight may hold the engine: the CLI exits now
            parser.layout.close()


def _open_document(
    parser: Parser, source: Path, paths: outputs.OutputPaths, selected: list[int], key: str, bar: Progress
) -> DocumentWork:
    """:meth:`DocumentWork.open`, its cache hits counted as done on the bar."""
    work = DocumentWork.open(source, paths, selected, key, parser.options.cache_dir)
    if work.cached:
        bar.update(work.cached)
    return work


def _page_done(work: DocumentWork, index: int, outcome: PageResult | BaseException, bar: Progress) -> None:
    """:meth:`DocumentWork.record` (re-raises fatal errors), then the page counted on the bar."""
    if work.record(index, outcome):
        bar.fail()
    bar.update(1)


def _run_document(
    parser: Parser,
    source: Path,
    paths: outputs.OutputPaths,
    selected: list[int],
    settings_values: dict,
    key: str,
    bar: Progress,
) -> DocumentSummary:
    work = _open_document(parser, source, paths, selected, key, bar)
    missing = work.missing

    def finish(fut: Future, index: int) -> None:
        try:
            res: PageResult | BaseException = fut.result()
        except FATAL:
            raise
        except Exception as exc:  # one bad page must not lose the others
            res = exc
        _page_done(work, index, res, bar)

    if missing:
        options = parser.options
        spec = ",".join(str(i + 1) for i in missing)
        pages = documents.iter_pages(
            source,
            pages=spec,
            dpi=options.dpi,
            password=options.password,
            max_pixels=options.max_pixels,
            thumbnailer=parser.layout.thumbnailer(),
            objects_reader=parser.objects_reader(),
        )
        pool = ThreadPoolExecutor(max_workers=parser.workers, thread_name_prefix=interrupts.WORKER_PREFIX)
        inflight: dict[Future, int] = {}
        render_time: dict[int, float] = {}
        fatal = threading.Event()
        try:
            for page, dt in _timed(pages):
                bar.start()  # a page is under way: from here on errors are the run's, not up front
                render_time[page.index] = dt
                inflight[pool.submit(_parse_page, parser, page, paths, fatal)] = page.index
                while len(inflight) >= parser.pages_in_flight:
                    done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                    for fut in done:
                        finish(fut, inflight.pop(fut))
            while inflight:  # as they finish: a done page is cached even if an earlier one is not
                for fut in wait(inflight, return_when=FIRST_COMPLETED)[0]:
                    finish(fut, inflight.pop(fut))
        except BaseException as exc:
            # Ctrl-C: do not wait for pages in flight (the CLI ends the process, issue 10);
            # pages not started are cancelled, finished ones are in the page cache already
            pool.shutdown(wait=not isinstance(exc, KeyboardInterrupt), cancel_futures=True)
            raise
        finally:
            pages.close()
        pool.shutdown(wait=True)
        for i, dt in render_time.items():
            if i in work.results:
                work.results[i].timings["render"] = dt
    return _write_document(parser, work, settings_values, key)


def _parse_page(
    parser: Parser, page: PageImage, paths: outputs.OutputPaths, fatal: threading.Event
) -> PageResult:
    """One page in a worker thread; not started once the run is stopping (Ctrl-C) or once a page
    of the document ended in a :data:`FATAL` error (a server that rejects one request rejects the
    next: the run stops at that page whether or not the next one was already queued)."""
    interrupts.check()
    if fatal.is_set():
        raise interrupts.Stopped("an earlier page stopped the run")
    try:
        return parser.parse_page(page, paths)
    except FATAL:
        fatal.set()
        raise


def _run_with(
    executor: PageExecutor,
    parser: Parser,
    plans: list,
    settings_values: dict,
    key: str,
    bar: Progress,
) -> list[DocumentSummary]:
    """Every input through ``executor``; each input is written as soon as its last page is in."""
    works = [_open_document(parser, f, paths, sel, key, bar) for f, paths, sel in plans]
    written: dict[int, DocumentSummary] = {}
    position = {id(w): n for n, w in enumerate(works)}

    def write_if_complete(w: DocumentWork) -> None:
        n = position[id(w)]
        if n not in written and not w.missing:
            written[n] = _write_document(parser, w, settings_values, key)
            w.results = {}  # written: keep memory bounded over many inputs

    def page_done(w: DocumentWork, index: int, outcome: PageResult | BaseException) -> None:
        _page_done(w, index, outcome, bar)
        write_if_complete(w)

    for w in works:
        write_if_complete(w)
    executor.run(parser, [w for w in works if w.missing], page_done)
    missing = [w.source for n, w in enumerate(works) if n not in written]
    if missing:
        raise RuntimeError(f"the page executor returned without pages of {missing[0]}")
    return [written[n] for n in range(len(works))]


def _write_document(parser: Parser, work: DocumentWork, settings_values: dict, key: str) -> DocumentSummary:
    """Assemble, write and validate NAME.md and NAME.blocks.json of one input (all pages in)."""
    options, paths, source = parser.options, work.paths, work.source
    doc = DocumentSummary(
        source=source,
        markdown=paths.markdown,
        pages=len(work.selected),
        cached=work.cached,
        failed=work.failures,
    )
    doc.seconds = time.perf_counter() - work.start
    ordered = [work.results[i] for i in work.selected]
    doc.partial = sum(1 for r in ordered if r.failed_blocks)
    doc.page_timings = [dict(r.timings) for r in ordered]
    assembly = render_document(ordered, keep_paratext=options.keep_paratext)
    doc.issues = assembly.issues
    blocks = outputs.blocks_document(
        source=source,
        sha256=work.sha,
        options=options,
        settings_values=settings_values,
        key=key,
        layout_name=parser.layout.name,
        recognizer_name=parser.recognizer.name,
        model_info=parser.model_info(),
        pages=ordered,
        complete=False,
        timings={"seconds": doc.seconds, "pages_per_second": doc.pages_per_second},
        issues=assembly.issues,
        validation=None,
    )
    # blocks.json first, marked incomplete: a run killed between the two writes leaves an output
    # the next run resumes (from the page cache), never a NAME.md without its provenance
    outputs.atomic_write_json(paths.blocks_json, blocks)
    outputs.atomic_write_text(paths.markdown, assembly.markdown)
    doc.validation = validate(paths.markdown, ordered)
    blocks["complete"] = work.failures == 0 and doc.partial == 0
    blocks["validation"] = json_report(doc.validation)
    outputs.atomic_write_json(paths.blocks_json, blocks)
    return doc


def json_report(report: Report) -> dict:
    """The report as a dict (same shape as :meth:`Report.to_json`)."""
    import json

    return json.loads(report.to_json())
