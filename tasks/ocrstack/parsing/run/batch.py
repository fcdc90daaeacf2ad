"""Which inputs of ``ocrstack parse`` need work (issue 10): inputs found inside the output
directory are dropped, each input's page selection is checked against its own page count (the
error names the file), and an input whose finished output matches it is up to date (like
``make``; :func:`ocrstack.parsing.outputs.check_overwrite`).
"""

from __future__ import annotations

from pathlib import Path

from ocrstack.core.errors import InputError, UsageError
from ocrstack.parsing import documents, outputs
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.run.outcomes import DocumentSummary


def without_outputs(files: list[Path], inputs: tuple[Path, ...], out_dir: Path) -> list[Path]:
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


def selected(path: Path, options: ParseOptions) -> list[int]:
    """0-based pages of ``path`` to parse (``--pages``, then ``--limit``).

    Raises:
        InputError: the file cannot be opened or read (the message names it).
        UsageError: ``--pages`` malformed or beyond the file's last page; the message names the
            file and its page count (issue 10: with several inputs it must say which one).
    """
    n = documents.count_pages(path, options.password)
    try:
        sel = documents.parse_page_range(options.pages, n, source=path)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc.message}", exc.remedy) from None
    return sel[: options.limit] if options.limit is not None else sel


def up_to_date(
    source: Path, paths: outputs.OutputPaths, selected: list[int], force: bool, key: str
) -> DocumentSummary | None:
    """An up-to-date :class:`DocumentSummary` when ``paths`` holds the finished output of this
    input, settings and pages (nothing to do), else None (parse it).

    Raises:
        UsageError: a finished output made from another input/settings/pages and no ``force``.
        InputError: the input cannot be read (hashing it).
    """
    sha = documents.file_sha256(source)
    if outputs.check_overwrite(paths, force, sha, key, selected) != outputs.UP_TO_DATE:
        return None
    n = len(selected)
    return DocumentSummary(source=source, markdown=paths.markdown, pages=n, cached=n, up_to_date=True)
