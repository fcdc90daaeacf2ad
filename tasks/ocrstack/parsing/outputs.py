"""Output files of ``ocrstack parse``: atomic writes, the per-page resume cache, blocks.json,
layout overlays and figure crops (issue 3 step 5).

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
import importlib.metadata as md
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from ocrstack import __version__
from ocrstack.core import options as core_options
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
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """UTF-8 text version of :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON, atomically."""
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


def atomic_save_image(path: Path, image: Image.Image) -> None:
    """Save ``image`` as PNG, atomically."""
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG")
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


def engine_versions() -> dict[str, str]:
    """Installed versions of the packages that shape the result (metadata read once a process)."""
    return dict(_engine_versions())


@lru_cache(maxsize=1)
def _engine_versions() -> tuple[tuple[str, str], ...]:
    out = [("ocrstack", __version__)]
    for d in ("rapidocr", "rapid-layout", "onnxruntime", "openvino", "transformers", "paddlex", "pypdfium2"):
        with contextlib.suppress(md.PackageNotFoundError):
            out.append((d, md.version(d)))
    return tuple(out)


#: What shapes a page's blocks (cache key, see :func:`code_fingerprint`): packages/modules by
#: import name (every module under a package, found with :mod:`pkgutil`) and package data
#: directories as ``(package, subdirectory)``.
PAGE_CODE: tuple[str | tuple[str, str], ...] = (
    "ocrstack.parsing",
    ("ocrstack", "data/layout_labels.yaml"),
    ("ocrstack", "data/prompts"),
)


def _module_sources(name: str) -> list[tuple[str, bytes]]:
    """(import name, source bytes) of module ``name`` and, for a package, of every submodule."""
    import importlib
    import importlib.util
    import pkgutil

    module = importlib.import_module(name)
    spec = importlib.util.find_spec(name)
    out = []
    if spec is not None and spec.loader is not None and spec.origin and spec.origin.endswith(".py"):
        out.append((name, spec.loader.get_data(spec.origin)))  # type: ignore[union-attr]
    for info in pkgutil.walk_packages(getattr(module, "__path__", []), prefix=f"{name}."):
        sub = importlib.util.find_spec(info.name)
        if sub is not None and sub.origin and sub.origin.endswith(".py"):
            out.append((info.name, sub.loader.get_data(sub.origin)))  # type: ignore[union-attr]
    return sorted(out)


def _data_files(package: str, rel: str) -> list[tuple[str, bytes]]:
    """(``package/rel/...`` name, bytes) of the YAML data files at ``rel`` in ``package``."""
    from importlib import resources

    root = resources.files(package).joinpath(rel)
    if root.is_file():
        return [(f"{package}/{rel}", root.read_bytes())]
    found = []
    stack = [(rel, root)]
    while stack:
        prefix, node = stack.pop()
        for child in node.iterdir():
            if child.is_dir():
                stack.append((f"{prefix}/{child.name}", child))
            elif child.name.endswith((".yaml", ".yml")):
                found.append((f"{package}/{prefix}/{child.name}", child.read_bytes()))
    return sorted(found)


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 (16 hex) over the source of the modules (by import name, read through their
    loaders) and the data files in :data:`PAGE_CODE`.

    The version string alone would let an edited checkout reuse pages computed by older
    code -- the guide's ``run_tag`` pitfall again -- so the code itself is part of the key.
    """
    digest = hashlib.sha256()
    for entry in PAGE_CODE:
        items = _module_sources(entry) if isinstance(entry, str) else _data_files(*entry)
        for name, data in items:
            digest.update(name.encode())
            digest.update(data)
    return digest.hexdigest()[:16]


def settings(options: ParseOptions, engine_fields: Iterable[str] = ()) -> dict[str, Any]:
    """Everything that changes a page's blocks, as a JSON-able dict (the cache key's settings part).

    The values are the options declared with ``cache`` in :mod:`ocrstack.parsing.options`
    (server URLs, concurrency, timeouts and output flags are not: they do not change what a
    page contains); options declared ``cache="engine"`` (served model, prompts, max tokens,
    keep_paratext) count only when named in ``engine_fields`` -- the chosen engines'
    :attr:`~ocrstack.parsing.engines.Engine.cache_fields` (``Parser.cache_fields()``); else they
    are None. Plus the engine package versions and :func:`code_fingerprint`.
    """
    return {
        **core_options.cache_values(options, engine_fields),
        "versions": engine_versions(),
        "code": code_fingerprint(),
    }


def settings_hash(values: dict[str, Any]) -> str:
    """16 hex digits of the sha256 of the canonical JSON of :func:`settings`."""
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:16]


class PageCache:
    """Per-page results keyed by (input sha256, page, settings hash), under ``OUT/.ocrstack-cache``
    or under ``root`` (``--cache-dir``: a directory shared by every node of a Ray cluster)."""

    def __init__(
        self, out_dir: Path, source_sha256: str, settings_key: str, root: Path | None = None
    ) -> None:
        self.dir = (root or out_dir / CACHE_DIR) / source_sha256[:16]
        self.key = settings_key
        self.sha = source_sha256

    def path(self, index: int) -> Path:
        """Cache file of 0-based page ``index``."""
        return self.dir / f"p{index + 1:04d}-{self.key}.json"

    def load(self, index: int, out_dir: Path) -> PageResult | None:
        """Return the cached page, or None when absent, unreadable, for another input, or when a
        figure file it links is missing."""
        try:
            data = json.loads(self.path(index).read_text(encoding="utf-8"))
            if data.get("sha256") != self.sha or data.get("settings") != self.key:
                return None
            result = PageResult.from_json(data["page"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if any(not (out_dir / rel).is_file() for rel in result.images.values()):
            return None
        return result

    def store(self, result: PageResult) -> None:
        """Write one finished page (pages with an error are never cached)."""
        if result.error:
            return
        atomic_write_json(
            self.path(result.index), {"sha256": self.sha, "settings": self.key, "page": result.to_json()}
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
