"""Output files of ``ocrstack parse``: atomic writes, the per-page resume cache, blocks.json,
layout overlays and figure crops (issue 3 step 5). The page cache and its key are
:mod:`ocrstack.parsing.page_cache`.

Layout of an output directory ``OUT`` for an input ``NAME.pdf``::

    OUT/NAME.md                       the Markdown
    OUT/NAME.blocks.json              pages, blocks (bbox/category/score/order/text), timings, provenance
    OUT/NAME_files/p0001-b03.png      figure crops (linked from NAME.md)
    OUT/NAME_files/p0001-layout.png   layout overlays (--save-layout-images)
    OUT/.ocrstack-cache/<sha256[:16]>/p0001-<settings>.json   resume cache, one file per page

The cache key is (input sha256, page, settings hash): a rerun with the same settings skips
finished pages, any change of a setting that affects the result (DPI, layout, layout model,
recognizer, served model, prompts, pixel budget, engine versions, code) recomputes. This is the
guide's ``run_tag`` pitfall (a rerun silently reusing old results) made impossible.
Every file is written to a temporary name in the same directory and moved into place with
:func:`os.replace`, so an interrupted run never leaves a half-written file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from ocrstack.core.errors import UsageError
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.types import Block, Category

CACHE_DIR = ".ocrstack-cache"
BLOCKS_SCHEMA = 1
#: Overlay colours per category (RGB).
COLOURS: dict[Category, tuple[int, int, int]] = {
    Category.TITLE: (220, 40, 40),
    Category.TEXT: (30, 110, 220),
    Category.LIST: (30, 160, 160),
    Category.TABLE: (40, 170, 60),
    Category.FORMULA: (200, 120, 0),
    Category.FIGURE: (150, 60, 200),
    Category.CAPTION: (200, 60, 150),
}


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory + ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # the temp name holds at most 40 characters of the file's (<= 160 bytes): a legal 240-character
    # name plus mkstemp's 8 and ".tmp" is over NAME_MAX, 255 bytes (issue 25 item 9)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the usual file mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: Every surrogate code point: in a Python str they are never a valid pair, always unencodable.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _umask() -> int:
    """The process umask without changing it (Linux: ``/proc/self/status``): setting it to 0 and
    back, the fallback, lets another thread create a file with mode 0666 meanwhile (the service
    writes with umask 077, issue 25 item 7)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """UTF-8 text version of :func:`atomic_write_bytes`. A surrogate code point, which UTF-8 cannot
    hold (a file name's undecodable byte, ``os.fsdecode``'s surrogateescape; an unpaired UTF-16
    surrogate in a PDF's text layer), is written as U+FFFD (issue 25 item 9: it crashed the write
    and the rest of the batch)."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = _SURROGATE.sub("\ufffd", text).encode("utf-8")
    atomic_write_bytes(path, data)


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON, atomically."""
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


#: zlib level of the PNG files written (figure crops, layout overlays). Pillow's default, 6, took
#: 104 ms for the 12 figure crops of the born-digital dev corpus (310 kB); 3 took 56 ms (259 kB),
#: 1 took 58 ms (281 kB). The pixels are the same at every level.
PNG_LEVEL = 3


def atomic_save_image(path: Path, image: Image.Image) -> None:
    """Save ``image`` as PNG (zlib level :data:`PNG_LEVEL`), atomically."""
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=PNG_LEVEL)
    atomic_write_bytes(path, buf.getvalue())


@dataclass(frozen=True)
class OutputPaths:
    """Where one input's outputs go (see the module docstring)."""

    out_dir: Path
    name: str

    @property
    def markdown(self) -> Path:
        return self.out_dir / f"{self.name}.md"

    @property
    def blocks_json(self) -> Path:
        return self.out_dir / f"{self.name}.blocks.json"

    @property
    def files_dir(self) -> Path:
        return self.out_dir / f"{self.name}_files"

    def figure(self, page: int, order: int) -> Path:
        """Figure crop of block ``order`` on 0-based ``page``."""
        return self.files_dir / f"p{page + 1:04d}-b{order:02d}.png"

    def overlay(self, page: int) -> Path:
        """Layout overlay of 0-based ``page``."""
        return self.files_dir / f"p{page + 1:04d}-layout.png"

    def relative(self, path: Path) -> str:
        """``path`` relative to the output directory, with forward slashes (for Markdown links)."""
        return path.relative_to(self.out_dir).as_posix()


def output_names(sources: list[Path]) -> dict[Path, str]:
    """Output base names: the file stem, plus a short path hash when two inputs share a stem."""
    stems: dict[str, int] = {}
    for s in sources:
        stems[s.stem] = stems.get(s.stem, 0) + 1
    return {
        s: s.stem if stems[s.stem] == 1 else f"{s.stem}-{hashlib.sha256(str(s).encode()).hexdigest()[:6]}"
        for s in sources
    }


def ensure_output_dir(out_dir: Path) -> None:
    """Create ``out_dir`` (with parents) and check a file can be written in it, before any page
    is parsed, so a bad ``-o`` fails in a second instead of after the OCR work (review of issue 3).

    Raises:
        UsageError: ``out_dir`` (or one of its parents) is an existing file, cannot be
            created, or is not writable; the message names the path and the fix.
    """
    hint = "pass -o a directory you can write to (it is created when missing)"
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"-o {out_dir} is an existing file, not a directory", hint)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out_dir, prefix=".ocrstack-write-test-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = f" ({exc.filename})" if exc.filename and Path(exc.filename) != out_dir else ""
        raise UsageError(
            f"-o {out_dir}: cannot create or write the output directory: {reason}{where}", hint
        ) from None


#: :func:`check_overwrite` verdicts.
NEW, RESUME, UP_TO_DATE = "new", "resume", "up to date"


def check_overwrite(
    paths: OutputPaths,
    force: bool,
    sha256: str | None = None,
    key: str | None = None,
    pages: list[int] | None = None,
) -> str:
    """Decide what a run does with an existing output, like ``make`` (issue 10).

    Returns :data:`UP_TO_DATE` when ``NAME.md`` exists and its ``NAME.blocks.json`` says
    ``"complete": true`` and was made from the same input (``sha256``), settings (``key``, the
    settings hash) and 0-based ``pages`` (each compared only when given): nothing to do.
    Returns :data:`RESUME` for an incomplete output (pages failed or the run was interrupted:
    the resumed run replaces it) and for any output with ``force``; :data:`NEW` when there is
    none. A finished output made from another input, other settings or other pages (or one
    whose blocks.json is missing/unreadable) is never replaced silently.

    Raises:
        UsageError: a finished output that does not match and ``force`` is false; names the
            file, what differs and the fix.
    """
    if not paths.markdown.exists():
        return NEW
    try:
        data = json.loads(paths.blocks_json.read_text(encoding="utf-8"))
        complete = bool(data.get("complete", True))
    except (OSError, ValueError, AttributeError):
        data, complete = {}, True
    if force or not complete:
        return RESUME
    if not data:
        why = f"without its {paths.blocks_json.name} (not an ocrstack output, or that file is unreadable)"
    else:
        differs = []
        if sha256 is None or data.get("sha256") != sha256:
            differs.append("another input")
        if key is None or data.get("settings_hash") != key:
            differs.append("other settings")
        if pages is not None and [p.get("page", 0) - 1 for p in data.get("pages", [])] != pages:
            differs.append("another page selection")
        if not differs:
            return UP_TO_DATE
        why = f"made from {' and '.join(differs)}"
    raise UsageError(
        f"{paths.markdown} already exists, {why}",
        "pass --force to overwrite it (finished pages are reused from the cache) or choose another -o",
    )


def draw_overlay(image: Image.Image, blocks: list[Block]) -> Image.Image:
    """Return a copy of ``image`` with each block's bbox, order and category drawn on it."""
    out = image.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    width = max(2, round(min(out.size) / 500))
    for b in blocks:
        colour = COLOURS.get(b.category, (120, 120, 120))
        draw.rectangle(b.bbox, outline=colour, width=width)
        draw.text((b.bbox[0] + 3, b.bbox[1] + 2), f"{b.order} {b.category.value}", fill=colour)
    return out


def blocks_document(
    *,
    source: Path,
    sha256: str,
    options: ParseOptions,
    settings_values: dict[str, Any],
    key: str,
    layout_name: str,
    recognizer_name: str,
    model_info: dict[str, str],
    pages: list[PageResult],
    complete: bool,
    timings: dict[str, float],
    issues: list[str],
    validation: dict[str, Any] | None,
) -> dict[str, Any]:
    """The ``NAME.blocks.json`` document (schema 1): provenance, pages with blocks, timings, issues."""
    return {
        "schema": BLOCKS_SCHEMA,
        "source": str(source),
        "sha256": sha256,
        "complete": complete,
        "layout": layout_name,
        "recognizer": recognizer_name,
        "model": model_info,
        "settings": settings_values,
        "settings_hash": key,
        "keep_paratext": options.keep_paratext,
        "timings": {k: round(v, 3) for k, v in timings.items()},
        "issues": issues,
        "validation": validation,
        "pages": [p.to_json() for p in sorted(pages, key=lambda x: x.index)],
    }
