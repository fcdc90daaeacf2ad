"""Orchestration of ``ocrstack parse``: load -> orient -> layout -> merge -> recognise -> order
-> assemble -> write -> validate, one input after another, pages streamed (issue 3).

Pages are rendered lazily by :func:`ocrstack.parsing.documents.iter_pages` in this thread (PDFium
is not thread-safe) and processed by a small thread pool: one worker for the embedded CPU
recognizer, ``concurrency x servers`` workers for a remote one, with at most twice that
many pages in flight so memory stays bounded. Finished pages go to the resume cache
before anything else, so an interrupted run loses at most the pages in flight.

A progress bar (tqdm, on stderr) shows pages done, pages/s and failures.

Optional hooks beyond the :mod:`ocrstack.parsing.types` protocols (looked up with ``getattr``):

* recognizer ``orient(page) -> (page, degrees)``: turn the page upright before layout
  (rapidocr decides 0/90/180/270 from its own line readings);
* recognizer ``probe()``: called once before the first page (openai: fail fast, guide 8);
* recognizer ``close()``: called at the end of the run;
* recognizer ``remote`` (bool): pages are processed concurrently;
* recognizer ``reads_whole_page`` (bool): it reads the page once and assigns lines to
  blocks (rapidocr); otherwise blocks are padded by ``CROP_PAD`` before it crops them;
* recognizer ``structured`` (bool, default True): answers are OTSL/HTML tables and LaTeX;
  False (rapidocr) keeps plain OCR text and warns;
* layout ``gives_order`` (bool): keep the provider's reading order;
* both ``model_info() -> dict``: provenance written to blocks.json.
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
from ocrstack.parsing import layout as layout_registry
from ocrstack.parsing import recognition as recognition_registry
from ocrstack.parsing.assembly.markdown import render_document
from ocrstack.parsing.geometry import clip, pad
from ocrstack.parsing.layout.merge import merge_overlaps
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.page_result import SKIPPED_PARATEXT, PageResult
from ocrstack.parsing.reading_order import order_blocks
from ocrstack.parsing.types import Block, Category, LayoutProvider, PageImage, Recognizer
from ocrstack.parsing.validate import validate

#: Errors that stop the whole run at once (guide 8: a 4xx is never retried; an unreachable
#: server or a missing model will not get better on the next page).
FATAL = (ServerRejected, ServerUnreachable, ConfigError, UsageError)
#: Padding (pixels at 200 DPI, scaled with DPI) around figure crops so edges are whole.
FIGURE_PAD = 8
#: Padding (pixels at 200 DPI, scaled with DPI) added to every block before a cropping
#: recognizer (openai) reads it: 6 px = 0.76 mm, about a quarter of a 10 pt line, enough for
#: ascenders/descenders a tight box cuts, too little to take in a neighbouring line.
CROP_PAD = 6


@dataclass
class DocumentSummary:
    """What happened to one input."""

    source: Path
    markdown: Path
    pages: int = 0
    cached: int = 0
    failed: int = 0
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


class Parser:
    """Holds the layout provider and recognizer for a run; :meth:`parse_page` is usable on its own."""

    def __init__(self, options: ParseOptions, recognizer: Recognizer | None = None) -> None:
        """Build the providers named in ``options`` (``recognizer`` overrides the registry's)."""
        self.options = options
        self.layout: LayoutProvider = layout_registry.create(options.layout, options)
        self.recognizer: Recognizer = recognizer or recognition_registry.create(options.recognizer, options)

    @property
    def workers(self) -> int:
        """Pages processed at once: 1 for a local recognizer, concurrency x servers for a remote one."""
        if getattr(self.recognizer, "remote", False) or self.options.recognizer == "openai":
            return max(1, self.options.concurrency * max(1, len(self.options.server_urls)))
        return 1

    def model_info(self) -> dict[str, str]:
        """Provenance for blocks.json: which models produced the blocks."""
        info = {"layout": self.layout.name, "recognizer": self.recognizer.name}
        if hasattr(self.layout, "model_info"):
            info.update({f"layout_{k}": v for k, v in self.layout.model_info().items()})
        if hasattr(self.recognizer, "model_info"):
            info.update({f"recognizer_{k}": v for k, v in self.recognizer.model_info().items()})
        elif self.options.recognizer == "openai":
            info["served_model"] = self.options.model
            info["prompts"] = self.options.prompts
        return info

    def parse_page(self, page: PageImage, paths: outputs.OutputPaths | None = None) -> PageResult:
        """Run orientation, layout, merging, recognition and reading order on one page.

        Figure crops (and overlays with ``save_layout_images``) are written under
        ``paths.files_dir`` when ``paths`` is given. Empty non-figure blocks get a warning.
        """
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        rotation = 0
        orient = getattr(self.recognizer, "orient", None)
        if orient is not None:
            page, rotation = orient(page)
        t1 = time.perf_counter()
        blocks = merge_overlaps(self.layout.detect(page))
        if not getattr(self.recognizer, "reads_whole_page", False):
            # the recognizer reads crops: grow each block so glyphs cut by a tight layout box
            # are whole (issue 3: rapid-layout crops cut through glyphs)
            margin = CROP_PAD * (page.dpi or 200) / 200
            for b in blocks:
                b.bbox = pad(b.bbox, margin, page.size)
        t2 = time.perf_counter()
        skipped: list[Block] = []
        if not getattr(self.recognizer, "reads_whole_page", False) and not self.options.keep_paratext:
            # assembly drops header/footer/page-number blocks unless --keep-paratext: do not
            # spend a server request on each of them (review of issue 3)
            skipped = [b for b in blocks if b.category.is_paratext or b.category is Category.ABANDON]
            blocks = [b for b in blocks if not (b.category.is_paratext or b.category is Category.ABANDON)]
            for b in skipped:
                b.warnings.append(
                    f"{SKIPPED_PARATEXT}: not sent to the recognizer (--keep-paratext reads it)"
                )
        blocks = self.recognizer.recognize(page, blocks) + skipped
        t3 = time.perf_counter()
        blocks = order_blocks(blocks, provider_order=bool(getattr(self.layout, "gives_order", False)))
        for b in blocks:
            if not b.text.strip() and b.category is not Category.FIGURE and not any(b is k for k in skipped):
                b.warnings.append("empty: the recognizer returned no text for this block")
        timings.update(orient=t1 - t0, layout=t2 - t1, recognize=t3 - t2)
        structured = bool(getattr(self.recognizer, "structured", True))
        result = PageResult(
            index=page.index,
            size=page.size,
            dpi=image_dpi(page),
            rotation=rotation,
            blocks=blocks,
            structured=structured,
            notes=list(page.notes),
            timings=timings,
        )
        if paths is not None:
            scale = (page.dpi or 200) / 200
            for b in blocks:
                if b.category is Category.FIGURE:
                    box = pad(clip(b.bbox, page.size), FIGURE_PAD * scale, page.size)
                    if box[2] - box[0] >= 2 and box[3] - box[1] >= 2:
                        target = paths.figure(page.index, b.order)
                        outputs.atomic_save_image(target, page.image.crop(tuple(round(v) for v in box)))
                        result.images[b.order] = paths.relative(target)
            if self.options.save_layout_images:
                outputs.atomic_save_image(paths.overlay(page.index), outputs.draw_overlay(page.image, blocks))
        result.timings["total"] = time.perf_counter() - t0
        return result


def summary_line(d: DocumentSummary) -> str:
    """One line per input: pages, cache hits, failures, speed (or "all pages from cache": no
    page was computed, so a rate would read as a misleading 0.00 pages/s), issues."""
    speed = "all pages from cache" if d.pages and d.cached == d.pages else f"{d.pages_per_second:.2f} pages/s"
    return (
        f"{d.markdown}: {d.pages} page(s), {d.cached} from cache, {d.failed} failed, {speed}, "
        f"{len(d.issues)} issue(s) listed in {d.markdown.with_suffix('.blocks.json').name}"
    )


def image_dpi(page: PageImage) -> float | None:
    """Resolution to record for ``page``: the render DPI of a PDF page, else the DPI the raster
    file declares (Pillow's ``info["dpi"]``), else None.

    Non-square pixels were resampled by :mod:`ocrstack.parsing.documents` to the higher of the two
    values, so that one is the page's DPI; values documents ignores as implausible (axis
    ratio over ``documents.MAX_DPI_RATIO``) or not positive give None.
    """
    if page.dpi is not None:
        return page.dpi
    raw = page.image.info.get("dpi")
    try:
        x, y = (float(v) for v in raw)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return None
    if x <= 0 or y <= 0 or max(x, y) / min(x, y) > documents.MAX_DPI_RATIO:
        return None
    return max(x, y)


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
) -> RunSummary:
    """Parse every input of ``options``; write NAME.md and NAME.blocks.json per input into ``options.output``.

    Returns the summary when every page of every input succeeded and validated. ``parser``
    replaces the providers built from ``options`` (tests, benchmarks); ``echo`` receives the
    summary lines (default: stderr).

    Raises:
        InputError / UsageError: bad input or option, before any page is parsed (--limit < 1,
            malformed --pages, unreadable files, an -o that is a file or not writable, existing
            outputs without --force -- checked in that order).
        ServerUnreachable / ServerRejected / ConfigError: stop the run at once.
        PartialSuccess: some pages failed; everything else was written (rerun resumes).
        CheckFailed: all pages parsed but the post-write validation failed (guide 6).
    """
    from tqdm import tqdm

    say = echo or (lambda s: print(s, file=sys.stderr))
    if options.limit is not None and options.limit < 1:
        raise UsageError(f"--limit must be >= 1, got {options.limit}", "use e.g. --limit 1, or omit --limit")
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
    probe = getattr(parser.recognizer, "probe", None)
    if callable(probe):
        probe()
    settings_values = outputs.settings(options)
    key = outputs.settings_hash(settings_values)
    summary = RunSummary()
    total = sum(len(sel) for _, _, sel in plans)
    bar = tqdm(total=total, unit="page", disable=not progress, file=sys.stderr, dynamic_ncols=True)
    bar.failed = 0  # failures over all inputs, shown as a postfix next to pages done and pages/s
    bar.set_postfix(failed=0)
    try:
        for f, paths, selected in plans:
            summary.documents.append(_run_document(parser, f, paths, selected, settings_values, key, bar))
    finally:
        bar.close()
        close = getattr(parser.recognizer, "close", None)
        if callable(close):
            close()
    failed_validation = []
    for d in summary.documents:
        say(summary_line(d))
        if d.validation is not None:
            say(d.validation.to_text())
            if not d.validation.ok:
                failed_validation.append(d)
    if summary.failed_pages:
        raise PartialSuccess(
            f"{summary.failed_pages} page(s) failed; the rest was written",
            "see the page errors above and in NAME.blocks.json; rerun the same command to retry those pages",
        )
    if failed_validation:
        raise CheckFailed(
            f"output validation failed for {', '.join(str(d.markdown) for d in failed_validation)}",
            "see the failed checks above (page and block named)",
        )
    return summary


def _run_document(
    parser: Parser,
    source: Path,
    paths: outputs.OutputPaths,
    selected: list[int],
    settings_values: dict,
    key: str,
    bar,  # noqa: ANN001 - tqdm
) -> DocumentSummary:
    options = parser.options
    start = time.perf_counter()
    sha = documents.file_sha256(source)
    cache = outputs.PageCache(paths.out_dir, sha, key)
    results: dict[int, PageResult] = {}
    for i in selected:
        hit = cache.load(i, paths.out_dir)
        if hit is not None:
            results[i] = hit
            bar.update(1)
    doc = DocumentSummary(source=source, markdown=paths.markdown, pages=len(selected), cached=len(results))
    missing = [i for i in selected if i not in results]
    failures = 0

    def finish(fut: Future, index: int) -> None:
        nonlocal failures
        try:
            res = fut.result()
        except FATAL:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad page must not lose the others
            msg = exc.render() if isinstance(exc, OcrstackError) else f"{type(exc).__name__}: {exc}"
            res = PageResult(index=index, size=(0, 0), error=msg)
            failures += 1
            bar.failed = getattr(bar, "failed", 0) + 1
            bar.set_postfix(failed=bar.failed)
        results[index] = res
        cache.store(res)
        bar.update(1)

    if missing:
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
                    while len(inflight) >= 2 * workers:
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
            if i in results:
                results[i].timings["render"] = dt
    doc.failed = failures
    doc.seconds = time.perf_counter() - start
    ordered = [results[i] for i in selected]
    assembly = render_document(ordered, keep_paratext=options.keep_paratext)
    outputs.atomic_write_text(paths.markdown, assembly.markdown)
    doc.issues = assembly.issues
    report = validate(paths.markdown, ordered)
    doc.validation = report
    blocks = outputs.blocks_document(
        source=source,
        sha256=sha,
        options=options,
        settings_values=settings_values,
        key=key,
        layout_name=parser.layout.name,
        recognizer_name=parser.recognizer.name,
        model_info=parser.model_info(),
        pages=ordered,
        complete=failures == 0,
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
