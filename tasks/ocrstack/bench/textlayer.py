"""Timed runs of the embedded default over the born-digital dev corpus, for the side-by-side
table (:mod:`ocrstack.bench.accuracy_table`, issue 11 "Done when").

:func:`dev_files` picks the born-digital dev files of the corpus (``manifest.json``: ``born``
and ``text_layer``, split ``dev``, not encrypted); :func:`warm_parser` builds a
:class:`~ocrstack.parsing.stages.Parser` for one ``--text-layer`` mode with its models
loaded and warmed on one page; :func:`timed_run` times one file through
:func:`ocrstack.parsing.run.pipeline.run`; :func:`pages_of` splits the Markdown at its page markers.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any

_PAGE = re.compile(r"<!-- page (\d+) -->")


def warm_parser(first: Path, text_layer: str, out: Path, dpi: int, recognizer: Any = None) -> tuple[Any, Any]:
    """``(options, Parser)`` for a bench run (``--text-layer text_layer``, paratext kept, ``force``),
    the models loaded (:meth:`~ocrstack.parsing.engines.Engine.load`: a run loads a model on the
    first page that needs it, and page 1 of ``first`` may need none) and warmed by parsing page 1
    of ``first`` into ``out``, so timed runs measure pages, not model loading. ``recognizer``
    replaces the registry's (bench variants)."""
    from ocrstack.parsing.options import ParseOptions
    from ocrstack.parsing.run import pipeline
    from ocrstack.parsing.stages import Parser

    base = ParseOptions(
        inputs=(first,), output=out, text_layer=text_layer, keep_paratext=True, dpi=dpi, force=True, pages="1"
    )
    parser = Parser(base, recognizer=recognizer)
    parser.layout.load()
    parser.recognizer.load()
    pipeline.run(base, progress=False, echo=lambda s: None, parser=parser)
    return base, parser


def timed_run(base: Any, parser: Any, source: Path, out: Path) -> tuple[Any, float]:
    """``(RunSummary, wall seconds)`` of every page of ``source`` parsed into ``out`` with ``parser``."""
    from ocrstack.parsing.run import pipeline

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


def pages_of(markdown: str) -> dict[int, str]:
    parts = _PAGE.split(markdown)
    return {int(parts[k]) - 1: parts[k + 1] for k in range(1, len(parts) - 1, 2)}
