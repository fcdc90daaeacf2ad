"""Embedded-default row: pages/s of the rapid-layout + rapidocr pipeline on CPU."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ocrstack.bench.harness import make_pdf, run_pipeline
from ocrstack.bench.options import BenchOptions
from ocrstack.bench.results import Row
from ocrstack.core.errors import OcrstackError


def _corpus_pdf() -> Path | None:
    """A born-digital corpus PDF for the embedded row, if the shared corpus is beside the checkout."""
    from ocrstack.core import paths

    root = Path(os.environ.get("OCRSTACK_CORPUS", "")) if os.environ.get("OCRSTACK_CORPUS") else None
    if root is None and paths.repo_root() is not None:
        root = paths.repo_root().parent / "shared" / "corpus"  # type: ignore[union-attr]
    candidate = root / "en_single_bzip2_manual.pdf" if root else None
    return candidate if candidate is not None and candidate.is_file() else None


def embedded_rows(opts: BenchOptions, work: Path) -> list[Row]:
    """Pages/s of the embedded default on a corpus PDF (or a generated one); a ``not-run`` row
    with the reason when its engines are missing. Information only, no target."""
    from ocrstack.parsing.options import ParseOptions

    pdf = _corpus_pdf()
    source = "corpus en_single_bzip2_manual.pdf" if pdf else "generated text PDF"
    if pdf is None:
        pdf = make_pdf(work / f"doc-{opts.embedded_pages}.pdf", opts.embedded_pages)
    from ocrstack.parsing import documents

    n_pages = min(opts.embedded_pages, documents.count_pages(pdf))
    shutil.rmtree(work / "out-embedded", ignore_errors=True)
    options = ParseOptions(
        inputs=(pdf,),
        output=work / "out-embedded",
        force=True,
        dpi=opts.dpi,
        pages=f"1-{n_pages}",
    )
    try:
        t, summary = run_pipeline(options)
    except (OcrstackError, ImportError) as exc:
        return [Row("embedded default pages/s", None, "pages/s", verdict="not-run", detail=str(exc)[:120])]
    pps = summary.documents[0].pages_per_second
    return [
        Row(
            "embedded default pages/s",
            round(pps, 3),
            "pages/s",
            detail=f"rapid-layout + rapidocr, {n_pages} page(s) of {source}, "
            f"{os.cpu_count()} CPUs; {t:.1f} s with model load",
        )
    ]
