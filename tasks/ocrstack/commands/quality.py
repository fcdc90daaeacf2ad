"""``ocrstack quality hardpdfs [DIR]`` and ``ocrstack quality olmocr``: the hard-PDF batch and
the olmOCR-Bench sample table of issue 22 (:mod:`ocrstack.bench.hardpdfs`,
:mod:`ocrstack.bench.olmocr_sample`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from ocrstack.commands import add_json
from ocrstack.core import options as opt
from ocrstack.core.errors import CheckFailed, InputError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``quality`` verb with ``hardpdfs``; its flags come from
    :class:`~ocrstack.bench.hardpdfs.HardPdfOptions`."""
    from ocrstack.bench.hardpdfs import HardPdfOptions

    p = sub.add_parser("quality", help="quality batches on external documents (issue 22)")
    qsub = p.add_subparsers(dest="quality_command", metavar="ACTION", required=True)
    hard = qsub.add_parser(
        "hardpdfs",
        help="parse a directory of hard real-world PDFs, one process per file with a timeout",
        description="Parse every PDF in DIR as `ocrstack parse` does, each with a per-file timeout; print "
        "pages, words of the text layer (PDFium, pdftotext when installed) and of ocrstack's Markdown, and "
        "the outcome (ok / failed: reason / timeout / crash / EMPTIED). Exit 1 when a file crashed, hung or "
        "lost the words of a page.",
    )
    hard.add_argument("directory", nargs="?", type=Path, metavar="DIR", help="default: the corpus cache")
    opt.add_arguments(hard, HardPdfOptions)
    add_json(hard, what="the table")
    hard.set_defaults(handler=_hardpdfs)
    olm = qsub.add_parser(
        "olmocr",
        help="the olmOCR-Bench sample: every candidate's pass counts per test type (olmocr's scorer)",
        description="Parse the olmOCR-Bench sample with each candidate (ocrstack default, --text-layer off, "
        "peers) and score the pages with the olmocr package's scorer; print passed/total per test type.",
    )
    opt.add_arguments(olm, OlmocrOptions)
    add_json(olm, what="the table")
    olm.set_defaults(handler=_olmocr)


@dataclass(frozen=True)
class OlmocrOptions:
    """Options of ``ocrstack quality olmocr``."""

    sample: Path | None = opt.option(
        None,
        flags=("--sample",),
        convert=opt.path,
        help="the sample folder (default ../shared/bench/olmocr-sample)",
    )
    scorer_python: str = opt.option(
        sys.executable,
        flags=("--scorer-python",),
        help="a Python with olmocr 0.4.27 (envs/olmocr.txt) (default: this one)",
    )
    math: bool = opt.option(
        False,
        flags=("--math",),
        help="also run the math tests (rendered by Playwright's browser, else by a system Chromium: "
        "Debian's chromium, or $OCRSTACK_CHROMIUM)",
    )
    peer_python: str | None = opt.option(
        None,
        flags=("--peer-python",),
        help="a Python with the peers (the bench extra: pymupdf4llm) for their rows (default: this one)",
    )
    workdir: Path | None = opt.option(
        None,
        flags=("--workdir",),
        convert=opt.path,
        help="keep outputs here (default: a temporary directory)",
    )


def _olmocr(args: argparse.Namespace) -> int:
    import tempfile

    from ocrstack.bench import olmocr_sample

    o = opt.build(OlmocrOptions, opt.namespace_values(args, OlmocrOptions))
    with tempfile.TemporaryDirectory(prefix="ocrstack-olmocr-") as tmp:
        work = o.workdir or Path(tmp)
        table = olmocr_sample.run_table(
            o.sample or olmocr_sample.default_sample(),
            work,
            o.scorer_python,
            math=o.math,
            peer_python=o.peer_python,
        )
    print(table.to_json() if args.json else table.to_text())
    return 0


def _hardpdfs(args: argparse.Namespace) -> int:
    from ocrstack.bench import hardpdfs

    o = opt.build(hardpdfs.HardPdfOptions, opt.namespace_values(args, hardpdfs.HardPdfOptions))
    directory = args.directory or hardpdfs.default_dir()
    if o.fetch:
        for name in hardpdfs.fetch(directory):
            print(f"fetched {name}")
    if not directory.is_dir() or not any(directory.glob("*.pdf")):
        raise InputError(
            f"no PDF in {directory}", "pass a directory of PDFs, or add --fetch for the manifest's"
        )
    extra = ("--text-layer", o.text_layer) if o.text_layer != "auto" else ()
    batch = hardpdfs.run_batch(directory, o.workdir, o.timeout, extra)
    print(batch.to_json() if args.json else batch.to_text())
    if batch.bad:
        names = ", ".join(r.file for r in batch.bad)
        raise CheckFailed(f"{len(batch.bad)} file(s) crashed, hung or were emptied: {names}", "see the table")
    return 0
