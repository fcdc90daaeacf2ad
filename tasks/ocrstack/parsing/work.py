"""What a page executor gets from :func:`ocrstack.parsing.pipeline.run`: the inputs of a run as
:class:`DocumentWork` (selected pages, cache hits, results so far), and the :class:`PageExecutor`
protocol for computing the missing pages elsewhere (``ocrstack parse --ray``:
:class:`ocrstack.scaleout.RayExecutor`). The pipeline keeps the page cache, assembly and outputs,
so an executor changes where pages are computed, never what the Markdown says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ocrstack.parsing import outputs
from ocrstack.parsing.page_result import PageResult

if TYPE_CHECKING:
    from ocrstack.parsing.stages import Parser


@dataclass
class DocumentWork:
    """One input during a run: its selected pages, the results so far (cache hits first), failures.

    A :class:`PageExecutor` computes the pages of :attr:`missing` and hands each outcome back.
    """

    source: Path
    paths: outputs.OutputPaths
    selected: list[int]
    sha: str
    cache: outputs.PageCache
    start: float
    results: dict[int, PageResult] = field(default_factory=dict)
    cached: int = 0
    failures: int = 0

    @property
    def missing(self) -> list[int]:
        """Selected 0-based pages without a result yet, in page order."""
        return [i for i in self.selected if i not in self.results]


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
