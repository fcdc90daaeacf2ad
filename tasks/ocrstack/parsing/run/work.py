"""What a page executor gets from :func:`ocrstack.parsing.run.pipeline.run`: the inputs of a run as
:class:`DocumentWork` (selected pages, cache hits, results so far; :meth:`DocumentWork.record`
keeps each page's outcome), and the :class:`PageExecutor` protocol for computing the missing pages
elsewhere (``ocrstack parse --ray``:
:class:`ocrstack.scaleout.RayExecutor`). The pipeline keeps the page cache, assembly and outputs,
so an executor changes where pages are computed, never what the Markdown says.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ocrstack.core.errors import (
    ConfigError,
    OcrstackError,
    ServerRejected,
    ServerUnreachable,
    UsageError,
)
from ocrstack.parsing import documents, outputs, page_cache
from ocrstack.parsing.page_result import PageResult

if TYPE_CHECKING:
    from ocrstack.parsing.stages import Parser


#: Errors that stop the whole run at once (guide 8: a 4xx is never retried; an unreachable
#: server or a missing model will not get better on the next page).
FATAL = (ServerRejected, ServerUnreachable, ConfigError, UsageError)


@dataclass
class DocumentWork:
    """One input during a run: its selected pages, the results so far (cache hits first), failures.

    A :class:`PageExecutor` computes the pages of :attr:`missing` and hands each outcome back.
    """

    source: Path
    paths: outputs.OutputPaths
    selected: list[int]
    sha: str
    cache: page_cache.PageCache
    start: float
    results: dict[int, PageResult] = field(default_factory=dict)
    cached: int = 0
    failures: int = 0

    @classmethod
    def open(
        cls, source: Path, paths: outputs.OutputPaths, selected: list[int], key: str, cache_root: Path | None
    ) -> DocumentWork:
        """Hash the input and take its finished pages from the page cache (settings hash ``key``;
        ``cache_root``: ``--cache-dir``, None for the one under ``paths.out_dir``). A partial page
        (a failed block) is not taken: it is redone, its read blocks come from the recognizer's
        answer cache, so only the failed ones are sent again.

        Raises:
            InputError: the input cannot be read (hashing it).
        """
        sha = documents.file_sha256(source)
        cache = page_cache.PageCache(paths.out_dir, sha, key, root=cache_root)
        work = cls(source, paths, selected, sha, cache, start=time.perf_counter())
        for i in selected:
            hit = cache.load(i, paths.out_dir)
            if hit is not None and not hit.failed_blocks:
                work.results[i] = hit
        work.cached = len(work.results)
        return work

    @property
    def missing(self) -> list[int]:
        """Selected 0-based pages without a result yet, in page order."""
        return [i for i in self.selected if i not in self.results]

    def record(self, index: int, outcome: PageResult | BaseException) -> bool:
        """Keep page ``index``'s outcome and store a result in the page cache. An exception that
        is not fatal becomes a failed page (one bad page must not lose the others; the page's
        ``error`` is its message). Returns True when the page failed so.

        Raises:
            the outcome itself when it is :data:`FATAL` or not an :class:`Exception` (Ctrl-C).
        """
        failed = isinstance(outcome, BaseException)
        if failed:
            if isinstance(outcome, FATAL) or not isinstance(outcome, Exception):
                raise outcome
            name = type(outcome).__name__
            msg = outcome.render() if isinstance(outcome, OcrstackError) else f"{name}: {outcome}"
            outcome = PageResult(index=index, size=(0, 0), error=msg)
            self.failures += 1
        self.results[index] = outcome
        self.cache.store(outcome)
        return failed


class PageExecutor(Protocol):
    """Computes the missing pages of many inputs elsewhere (``ocrstack parse --ray``:
    :class:`ocrstack.scaleout.RayExecutor`); the pipeline keeps the cache, assembly and outputs."""

    def run(
        self,
        parser: Parser,
        work: list[DocumentWork],
        page_done: Callable[[DocumentWork, int, PageResult | BaseException], None],
    ) -> None:
        """Compute every page in ``w.missing`` of each ``w`` in ``work`` with ``parser.options``
        (the result's ``timings`` include ``render``); call ``page_done(w, index, result or the
        page's exception)`` once per page, from the calling thread. ``page_done`` re-raises
        fatal errors (:data:`FATAL`): stop and let them propagate."""
        ...
