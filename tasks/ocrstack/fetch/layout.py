"""``ocrstack fetch layout``: the PP-DocLayoutV3 Paddle inference tarball (guide 3.4).

Downloads with resume and retries (:mod:`ocrstack.fetch.http`), extracts with the tar
``data`` filter into a staging dir, checks ``inference.pdiparams``/``.json``/``.yml`` and
moves the directory into place; prints the ``OCR_LAYOUT_MODEL_DIR`` export.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ocrstack.core.errors import ConfigError, InputError
from ocrstack.core.results import Report, Status
from ocrstack.fetch import archive, catalog, http
from ocrstack.fetch.options import LayoutFetchOptions
from ocrstack.fetch.verify import LAYOUT_EXPLANATION, check_layout_dir


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int | None], None]]:
    """A tqdm byte counter on stderr (silent when stderr is not a terminal)."""
    from tqdm import tqdm

    bar = tqdm(total=None, unit="B", unit_scale=True, desc=label, disable=not sys.stderr.isatty())

    def update(done: int, total: int | None) -> None:
        if total is not None and bar.total != total:
            bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()


def export_line(directory: Path) -> str:
    """``export OCR_LAYOUT_MODEL_DIR=<absolute path>`` (guide 3.4, 5)."""
    return f"export OCR_LAYOUT_MODEL_DIR={directory.resolve()}"


def fetch_layout(opts: LayoutFetchOptions, *, backoff: float = 1.0) -> tuple[Path, Report]:
    """Download + extract + check; returns (layout dir, report).

    An existing complete directory is reused without downloading. An existing incomplete
    one is never overwritten.

    Raises:
        ConfigError: the target exists but is not a complete Paddle inference dir.
        InputError: the archive is unsafe or lacks the inference files.
        ServerRejected / ServerUnreachable / StepFailed: download errors (:func:`http.download`).
    """
    spec = catalog.layouts()[opts.name] if opts.name in catalog.layouts() else None
    if spec is None:
        raise ConfigError(f"unknown layout model '{opts.name}'", f"use one of {', '.join(catalog.layouts())}")
    target = opts.dest / spec.dir
    report = Report(f"fetch: layout model {spec.name} (guide 3.4)")
    if target.exists():
        check = check_layout_dir(target, spec)
        if check.status is Status.PASS:
            report.add(check)
            return target, report
        raise ConfigError(
            f"{target} exists but is not a complete Paddle inference directory ({check.detail})",
            "move it away (nothing is overwritten), then rerun `ocrstack fetch layout`",
        )
    url = opts.url or spec.url
    tar = opts.dest / url.rsplit("/", 1)[-1]
    if not tar.is_file():
        with _progress(tar.name) as cb:
            http.download(url, tar, retries=opts.retries, backoff=backoff, progress=cb)
    stage = archive.extract(tar, opts.dest)
    try:
        root = archive.content_root(stage, spec.required)
        if root is None:
            if any(stage.rglob("*.safetensors")):
                raise InputError(
                    f"{tar} holds a safetensors model, not a Paddle inference model", LAYOUT_EXPLANATION
                )
            raise InputError(
                f"{tar} lacks {', '.join(spec.required)}", f"check the URL ({url}); {LAYOUT_EXPLANATION}"
            )
        archive.move_into_place(root, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    if not opts.keep_tar:
        tar.unlink(missing_ok=True)
    report.add(check_layout_dir(target, spec))
    return target, report
