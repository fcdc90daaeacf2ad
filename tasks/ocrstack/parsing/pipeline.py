"""Orchestration of ``ocrstack parse``: load -> orient -> layout -> merge -> recognise -> order
-> assemble -> write -> validate, one input after another, pages streamed (issue 3).

Pages are rendered lazily by :func:`ocrstack.parsing.documents.iter_pages` in this thread (PDFium
is not thread-safe) and processed by a small thread pool of the recognizer's ``workers`` (one
for the embedded CPU recognizer, ``concurrency x servers`` for openai), with at most its
``pages_in_flight`` (twice that) rendered at once so memory stays bounded. Finished pages go to
the resume cache before anything else, so an interrupted run loses at most the pages in flight.

A progress bar (tqdm, on stderr) shows pages done, pages/s and failures.

Options are validated once, at the start of :func:`run` (every caller: CLI, bench, tests, the HTTP
API). One page is processed by :class:`ocrstack.parsing.stages.Parser` as a list of stages; every
engine question (remote?, workers, probe, close, model info, cache-key fields) goes through the
protocol of :mod:`ocrstack.parsing.engines`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack.core.errors import (
    CheckFailed,
    ConfigError,
    InputError,
    OcrstackError,
    PartialSuccess,
    ServerRejected,
    ServerUnreachable,
    UsageError,
)
from ocrstack.core.results import Report
from ocrstack.parsing import documents, outputs
from ocrstack.parsing.assembly.markdown import render_document, summary
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.options import validate as validate_options
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.stages import CROP_PAD, FIGURE_PAD, STAGES, Parser, image_dpi
from ocrstack.parsing.types import PageImage
from ocrstack.parsing.validate import validate
from ocrstack.parsing.work import DocumentWork, PageExecutor

__all__ = [
    "DocumentWork",
    "PageExecutor",
    "CROP_PAD",
    "FIGURE_PAD",
    "STAGES",
    "Parser",
    "image_dpi",
    "run",
    "RunSummary",
    "DocumentSummary",
]

#: Errors that stop the whole run at once (guide 8: a 4xx is never retried; an unreachable
#: server or a missing model will not get better on the next page).
FATAL = (ServerRejected, ServerUnreachable, ConfigError, UsageError)


@dataclass
class DocumentSummary:
    """What happened to one input."""

    source: Path
    markdown: Path
    pages: int = 0
    cached: int = 0
    failed: int = 0
    partial: int = 0  # pages with a failed block (Block.error): written, marked, retried on a rerun
    seconds: float = 0.0
    issues: list[str] = field(default_factory=list)
    validation: Report | None = None

    @property
    def pages_per_second(self) -> float:
        """Pages computed (not cached) per wall-clock second."""
        done = self.pages - self.cached
        return done / self.seconds if self.seconds > 0 and done > 0 else 0.0


@dataclass
class RunSummary:
    """All inputs of one ``parse`` call."""

    documents: list[DocumentSummary] = field(default_factory=list)

    @property
    def failed_pages(self) -> int:
        return sum(d.failed for d in self.documents)

    @property
    def partial_pages(self) -> int:
        """Pages written with at least one failed block (issue 10)."""
        return sum(d.partial for d in self.documents)


def summary_line(d: DocumentSummary) -> str:
    """One line per input: pages, cache hits, failures, speed (or "all pages from cache": no
    page was computed, so a rate would read as a misleading 0.00 pages/s), issues."""
    speed = "all pages from cache" if d.pages and d.cached == d.pages else f"{d.pages_per_second:.2f} pages/s"
    return (
        f"{d.markdown}: {d.pages} page(s), {d.cached} from cache, {d.failed} failed, "
        + (f"{d.partial} with failed blocks, " if d.partial else "")
        + f"{speed}, "
        + summary(d.issues, len(d.validation.failures()) if d.validation else d.failed, d.markdown)
    )


def _without_outputs(files: list[Path], inputs: tuple[Path, ...], out_dir: Path) -> list[Path]:
    """Drop files found by walking a directory that lie inside the output directory (figure
    crops and overlays of an earlier run must not become inputs when ``-o`` is inside an input
    directory). Files named explicitly are kept.

    Raises:
        InputError: nothing is left to parse.
    """
    explicit = {Path(p).absolute() for p in inputs}
    kept = [f for f in files if f in explicit or not f.absolute().is_relative_to(out_dir)]
    if not kept:
        raise InputError(
            f"every input lies inside the output directory {out_dir}",
            "choose an output directory outside the input directories (-o)",
        )
    return kept


def _selected(path: Path, options: ParseOptions) -> list[int]:
    n = documents.count_pages(path, options.password)
    sel = documents.parse_page_range(options.pages, n)
    return sel[: options.limit] if options.limit is not None else sel


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
    """Parse every input of ``options``; write NAME.md and NAME.blocks.json per input into ``options.output``.

    Returns the summary when every page of every input succeeded and validated. ``parser``
    replaces the providers built from ``options`` (tests, benchmarks); ``echo`` receives the
    summary lines (default: stderr). ``executor`` computes the pages elsewhere (``--ray``:
    :class:`ocrstack.scaleout.RayExecutor`); cache, assembly and outputs stay here, so the
    Markdown is the same as without it.

    Raises:
        InputError / UsageError: bad input or option, before any page is parsed (any option
            out of its declared range, malformed --pages, unreadable files, an -o that is a file
            or not writable, existing outputs without --force -- checked in that order).
        ServerUnreachable / ServerRejected / ConfigError: stop the run at once.
        PartialSuccess: some pages failed; everything else was written (rerun resumes).
        CheckFailed: all pages parsed but the post-write validation failed (guide 6).
    """
    from tqdm import tqdm

    say = echo or (lambda s: print(s, file=sys.stderr))
    validate_options(options)
    out_dir = Path(options.output).absolute()
    files = _without_outputs(documents.expand_inputs(options.inputs), options.inputs, out_dir)
    names = outputs.output_names(files)
    # option values first (page ranges), then the output directory, then "already exists":
    # an existing output must not hide a bad option, and nothing is parsed before all pass
    selections = {f: _selected(f, options) for f in files}
    outputs.ensure_output_dir(out_dir)
    plans = []
    for f in files:
        paths = outputs.OutputPaths(out_dir, names[f])
        outputs.check_overwrite(paths, options.force)
        plans.append((f, paths, selections[f]))
    parser = parser or Parser(options)
    parser.layout.probe()
    parser.recognizer.probe()
    settings_values = outputs.settings(options, parser.cache_fields())
    key = outputs.settings_hash(settings_values)
    summary = RunSummary()
    total = sum(len(sel) for _, _, sel in plans)
    bar = tqdm(total=total, unit="page", disable=not progress, file=sys.stderr, dynamic_ncols=True)
    bar.failed = 0  # failures over all inputs, shown as a postfix next to pages done and pages/s
    bar.set_postfix(failed=0)
    try:
        if executor is not None:
            summary.documents.extend(_run_with(executor, parser, plans, settings_values, key, bar))
        else:
            for f, paths, selected in plans:
                summary.documents.append(_run_document(parser, f, paths, selected, settings_values, key, bar))
    finally:
        bar.close()
        parser.recognizer.close()
        parser.layout.close()
    failed_validation = []
    for d in summary.documents:
        say(summary_line(d))
        if d.validation is not None:
            say(d.validation.to_text())
            if not d.validation.ok:
                failed_validation.append(d)
    if summary.failed_pages or summary.partial_pages:
        partial = f", {summary.partial_pages} page(s) with failed blocks" if summary.partial_pages else ""
        raise PartialSuccess(
            f"{summary.failed_pages} page(s) failed{partial}; the rest was written",
            "see the page and block errors above and in NAME.blocks.json (blocks with status failed); "
            "rerun the same command to retry only those",
        )
    if failed_validation:
        raise CheckFailed(
            f"output validation failed for {', '.join(str(d.markdown) for d in failed_validation)}",
            "see the failed checks above (page and block named)",
        )
    return summary


def _open_document(
    parser: Parser, source: Path, paths: outputs.OutputPaths, selected: list[int], key: str, bar
) -> DocumentWork:  # noqa: ANN001
    """Hash the input and take its finished pages from the page cache."""
    sha = documents.file_sha256(source)
    cache = outputs.PageCache(paths.out_dir, sha, key, root=parser.options.cache_dir)
    work = DocumentWork(
        source=source, paths=paths, selected=selected, sha=sha, cache=cache, start=time.perf_counter()
    )
    for i in selected:
        hit = cache.load(i, paths.out_dir)
        if hit is not None and not hit.failed_blocks:  # a partial page is redone; its read blocks
            # come from the recognizer's answer cache, so only the failed ones are sent again
            work.results[i] = hit
            bar.update(1)
    work.cached = len(work.results)
    return work


def _page_done(work: DocumentWork, index: int, outcome: PageResult | BaseException, bar) -> None:  # noqa: ANN001
    """Record one page: a result goes to the cache; an exception is re-raised when fatal, else
    becomes a failed page (one bad page must not lose the others)."""
    if isinstance(outcome, BaseException):
        if isinstance(outcome, FATAL) or not isinstance(outcome, Exception):
            raise outcome
        msg = (
            outcome.render() if isinstance(outcome, OcrstackError) else f"{type(outcome).__name__}: {outcome}"
        )
        outcome = PageResult(index=index, size=(0, 0), error=msg)
        work.failures += 1
        bar.failed = getattr(bar, "failed", 0) + 1
        bar.set_postfix(failed=bar.failed)
    work.results[index] = outcome
    work.cache.store(outcome)
    bar.update(1)


def _run_document(
    parser: Parser,
    source: Path,
    paths: outputs.OutputPaths,
    selected: list[int],
    settings_values: dict,
    key: str,
    bar,  # noqa: ANN001 - tqdm
) -> DocumentSummary:
    work = _open_document(parser, source, paths, selected, key, bar)
    missing = work.missing

    def finish(fut: Future, index: int) -> None:
        try:
            res: PageResult | BaseException = fut.result()
        except FATAL:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad page must not lose the others
            res = exc
        _page_done(work, index, res, bar)

    if missing:
        options = parser.options
        spec = ",".join(str(i + 1) for i in missing)
        pages = documents.iter_pages(
            source, pages=spec, dpi=options.dpi, password=options.password, max_pixels=options.max_pixels
        )
        workers = parser.workers
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ocrstack-page") as pool:
            inflight: dict[Future, int] = {}
            render_time: dict[int, float] = {}
            try:
                for page, dt in _timed(pages):
                    render_time[page.index] = dt
                    inflight[pool.submit(parser.parse_page, page, paths)] = page.index
                    while len(inflight) >= parser.pages_in_flight:
                        done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                        for fut in done:
                            finish(fut, inflight.pop(fut))
                for fut in list(inflight):
                    finish(fut, inflight.pop(fut))
            except BaseException:
                for fut in inflight:
                    fut.cancel()
                raise
            finally:
                pages.close()
        for i, dt in render_time.items():
            if i in work.results:
                work.results[i].timings["render"] = dt
    return _write_document(parser, work, settings_values, key)


def _run_with(
    executor: PageExecutor,
    parser: Parser,
    plans: list,
    settings_values: dict,
    key: str,
    bar,  # noqa: ANN001
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
    assembly = render_document(ordered, keep_paratext=options.keep_paratext)
    outputs.atomic_write_text(paths.markdown, assembly.markdown)
    doc.issues = assembly.issues
    report = validate(paths.markdown, ordered)
    doc.validation = report
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
        complete=work.failures == 0 and doc.partial == 0,
        timings={"seconds": doc.seconds, "pages_per_second": doc.pages_per_second},
        issues=assembly.issues,
        validation=json_report(report),
    )
    outputs.atomic_write_json(paths.blocks_json, blocks)
    return doc


def json_report(report: Report) -> dict:
    """The report as a dict (same shape as :meth:`Report.to_json`)."""
    import json

    return json.loads(report.to_json())
