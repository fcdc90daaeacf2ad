"""Text layer vs the OCR path on the born-digital dev corpus, in one run (issue 11, "Done when").

For every born-digital dev file of the corpus (``manifest.json``: ``born`` and ``text_layer``,
split ``dev``, not encrypted) the embedded default is run twice through
:func:`ocrstack.parsing.pipeline.run` with the same :class:`~ocrstack.parsing.pipeline.Parser`
per mode (models loaded and warmed on one page before timing): ``--text-layer auto`` and
``--text-layer off`` (the OCR path). Both keep paratext so every word of the page is measured.

Per file and in total: word recall and order (token-sequence similarity) of the Markdown
against NAME.txt (the PDF's text layer, pages split by form feed), and pages/s of each mode.
The target is the ratio ``auto / off`` of pages per second (>= :data:`SPEED_TARGET`) with
recall >= :data:`RECALL_TARGET` and order >= :data:`ORDER_TARGET` for ``auto``.

The metric functions are the accuracy suite's (:mod:`ocrstack.bench.metrics`: ``word_recall``,
``sequence_similarity``, ``markdown_text``), or any module with those names passed in as
``metrics``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ocrstack.bench import metrics as accuracy_metrics

#: Issue 11 targets for born-digital pages with ``--text-layer auto``.
RECALL_TARGET = 0.99
ORDER_TARGET = 0.95
SPEED_TARGET = 20.0

_PAGE = re.compile(r"<!-- page (\d+) -->")


@dataclass
class FileRow:
    """One corpus file: pages, and per mode recall, order and seconds (whole ``pipeline.run``)."""

    name: str
    pages: int
    recall: dict[str, float] = field(default_factory=dict)
    order: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    sources: dict[str, int] = field(default_factory=dict)


@dataclass
class TextLayerBench:
    """All files plus totals; ``speedup`` = pages/s of ``auto`` over pages/s of ``off``."""

    files: list[FileRow] = field(default_factory=list)

    def pages(self) -> int:
        return sum(f.pages for f in self.files)

    def pages_per_second(self, mode: str) -> float:
        s = sum(f.seconds.get(mode, 0.0) for f in self.files)
        return self.pages() / s if s > 0 else 0.0

    def mean(self, what: str, mode: str) -> float:
        """Page-weighted mean of ``recall`` or ``order`` for ``mode``."""
        vals = [(getattr(f, what)[mode], f.pages) for f in self.files if mode in getattr(f, what)]
        n = sum(p for _, p in vals)
        return sum(v * p for v, p in vals) / n if n else 0.0

    @property
    def speedup(self) -> float:
        off = self.pages_per_second("off")
        return self.pages_per_second("auto") / off if off > 0 else 0.0

    def ok(self) -> bool:
        """The issue 11 targets hold."""
        return (
            self.mean("recall", "auto") >= RECALL_TARGET
            and self.mean("order", "auto") >= ORDER_TARGET
            and self.speedup >= SPEED_TARGET
        )

    def table(self) -> str:
        """Plain-text table, one line per file, then the totals and the verdict."""
        head = (
            f"{'file':40} {'pages':>5}  {'recall auto/off':>15}  {'order auto/off':>14}  {'s auto/off':>13}"
        )
        lines = [head]
        for f in self.files:
            lines.append(
                f"{f.name:40} {f.pages:5d}  {f.recall.get('auto', 0):7.3f}/{f.recall.get('off', 0):.3f}"
                f"  {f.order.get('auto', 0):6.3f}/{f.order.get('off', 0):.3f}"
                f"  {f.seconds.get('auto', 0):6.2f}/{f.seconds.get('off', 0):.2f}"
            )
        lines.append(
            f"{'all':40} {self.pages():5d}"
            f"  {self.mean('recall', 'auto'):7.3f}/{self.mean('recall', 'off'):.3f}"
            f"  {self.mean('order', 'auto'):6.3f}/{self.mean('order', 'off'):.3f}"
            f"  pages/s {self.pages_per_second('auto'):.3f}/{self.pages_per_second('off'):.3f}"
            f" = {self.speedup:.1f}x"
        )
        lines.append(
            f"targets (auto): recall >= {RECALL_TARGET}, order >= {ORDER_TARGET},"
            f" >= {SPEED_TARGET:g}x pages/s: " + ("met" if self.ok() else "NOT met")
        )
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "files": [dataclasses.asdict(f) for f in self.files],
            "pages_per_second": {m: self.pages_per_second(m) for m in ("auto", "off")},
            "speedup": self.speedup,
            "recall_auto": self.mean("recall", "auto"),
            "order_auto": self.mean("order", "auto"),
            "ok": self.ok(),
        }


def warm_parser(first: Path, text_layer: str, out: Path, dpi: int, recognizer: Any = None) -> tuple[Any, Any]:
    """``(options, Parser)`` for a bench run (``--text-layer text_layer``, paratext kept, ``force``),
    the models loaded and warmed by parsing page 1 of ``first`` into ``out``, so timed runs
    measure pages, not model loading. ``recognizer`` replaces the registry's (bench variants)."""
    from ocrstack.parsing import pipeline
    from ocrstack.parsing.options import ParseOptions

    base = ParseOptions(
        inputs=(first,), output=out, text_layer=text_layer, keep_paratext=True, dpi=dpi, force=True, pages="1"
    )
    parser = pipeline.Parser(base, recognizer=recognizer)
    pipeline.run(base, progress=False, echo=lambda s: None, parser=parser)
    return base, parser


def timed_run(base: Any, parser: Any, source: Path, out: Path) -> tuple[Any, float]:
    """``(RunSummary, wall seconds)`` of every page of ``source`` parsed into ``out`` with ``parser``."""
    from ocrstack.parsing import pipeline

    opts = dataclasses.replace(base, inputs=(source,), output=out, pages=None)
    t = time.perf_counter()
    summary = pipeline.run(opts, progress=False, echo=lambda s: None, parser=parser)
    return summary, time.perf_counter() - t


def dev_files(corpus: Path) -> list[Path]:
    """Born-digital dev PDFs with a text layer and NAME.txt, not encrypted (manifest order)."""
    manifest = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    out = []
    for e in manifest:
        if e.get("born") and e.get("text_layer") and e.get("split") == "dev" and not e.get("encrypted"):
            pdf = corpus / Path(e["file"]).name
            if pdf.is_file() and pdf.with_suffix(".txt").is_file():
                out.append(pdf)
    return out


def _pages_of(markdown: str) -> dict[int, str]:
    parts = _PAGE.split(markdown)
    return {int(parts[k]) - 1: parts[k + 1] for k in range(1, len(parts) - 1, 2)}


def run(
    corpus: Path,
    work: Path,
    files: list[Path] | None = None,
    metrics: ModuleType | None = None,
    dpi: int = 200,
) -> TextLayerBench:
    """Measure ``files`` (default :func:`dev_files`) with ``auto`` and ``off``; outputs go under ``work``.

    Raises:
        OcrstackError: a parse failed (the bench does not hide failures).
    """

    m = metrics or accuracy_metrics
    files = files if files is not None else dev_files(corpus)
    bench = TextLayerBench()
    rows = {f: FileRow(f.stem, 0) for f in files}
    for mode in ("auto", "off"):
        base, parser = warm_parser(files[0], mode, work / f"warm-{mode}", dpi)
        for f in files:
            summary, seconds = timed_run(base, parser, f, work / mode)
            doc = summary.documents[0]
            md = doc.markdown.read_text(encoding="utf-8")
            blocks = json.loads(doc.markdown.with_suffix(".blocks.json").read_text(encoding="utf-8"))
            truth = f.with_suffix(".txt").read_text(encoding="utf-8").split("\f")
            pages = _pages_of(md)
            out = "\n".join(m.markdown_text(pages.get(i, "")) for i in range(len(pages)))
            gold = "\n".join(truth[i] for i in range(len(pages)))
            row = rows[f]
            row.pages = doc.pages
            row.recall[mode] = m.word_recall(gold, out)
            row.order[mode] = m.sequence_similarity(gold, out)
            row.seconds[mode] = seconds
            if mode == "auto":
                for p in blocks.get("pages", []):
                    for b in p.get("blocks", []):
                        src = b.get("source", "?")
                        row.sources[src] = row.sources.get(src, 0) + 1
    bench.files = list(rows.values())
    return bench
