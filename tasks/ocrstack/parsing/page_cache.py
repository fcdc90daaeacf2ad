"""The page cache: finished pages kept per (input sha256, page, settings hash), so a rerun with the
same settings skips them and any change that affects a page's blocks recomputes it.

The key's settings part (:func:`settings`) holds the options declared with ``cache`` in
:mod:`ocrstack.parsing.options`, the versions of the packages that shape the result
(:func:`engine_versions`) and a fingerprint of the page code itself (:func:`code_fingerprint`):
the guide's ``run_tag`` pitfall (a rerun silently reusing old results) made impossible. Files
live under ``OUT/.ocrstack-cache/<sha256[:16]>/`` (:data:`~ocrstack.parsing.outputs.CACHE_DIR`)
or a shared ``--cache-dir``, written atomically (:func:`~ocrstack.parsing.outputs.atomic_write_json`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as md
import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from ocrstack import __version__
from ocrstack.core import options as core_options
from ocrstack.parsing import outputs
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.page_result import PageResult


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
        self.dir = (root or out_dir / outputs.CACHE_DIR) / source_sha256[:16]
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
        outputs.atomic_write_json(
            self.path(result.index), {"sha256": self.sha, "settings": self.key, "page": result.to_json()}
        )
