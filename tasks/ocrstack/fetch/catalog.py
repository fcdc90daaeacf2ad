"""The model catalog ``ocrstack/data/models.yaml`` (guide 3.4) as typed objects."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ocrstack.core import paths
from ocrstack.core.errors import ConfigError, UsageError


@dataclass(frozen=True)
class ModelSpec:
    """One hub model: ``name`` (local dir name under models/), hub ``repo``, ``kind`` main|draft.

    Drafts also name their ``main`` model, the ``manifest`` file and the ``weights`` file
    whose sha256 the manifest records (guide 3.4).
    """

    name: str
    repo: str
    kind: str
    required: tuple[str, ...]
    main: str | None = None
    manifest: str | None = None
    weights: str | None = None


@dataclass(frozen=True)
class LayoutSpec:
    """A Paddle inference tarball: ``url``, extracted ``dir`` name and ``required`` files."""

    name: str
    url: str
    dir: str
    required: tuple[str, ...]


@lru_cache(maxsize=2)
def _load(path: str) -> dict:
    data = paths.read_yaml(path, "the model catalog")
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise ConfigError(f"{path}: expected 'schema: 1'", "restore it from git")
    return data


def catalog_file() -> Path:
    """``ocrstack/data/models.yaml``."""
    return paths.data_file("models.yaml")


def models(path: Path | None = None) -> dict[str, ModelSpec]:
    """All hub models by name."""
    data = _load(str(path or catalog_file()))
    out = {}
    for name, m in data["models"].items():
        out[name] = ModelSpec(
            name=name,
            repo=m["repo"],
            kind=m["kind"],
            required=tuple(m["required"]),
            main=m.get("main"),
            manifest=m.get("manifest"),
            weights=m.get("weights"),
        )
    return out


def layouts(path: Path | None = None) -> dict[str, LayoutSpec]:
    """All layout tarballs by name."""
    data = _load(str(path or catalog_file()))
    return {n: LayoutSpec(n, m["url"], m["dir"], tuple(m["required"])) for n, m in data["layout"].items()}


def model(name: str) -> ModelSpec:
    """One model by name.

    Raises:
        UsageError: unknown name (the message lists the known ones).
    """
    known = models()
    if name not in known:
        raise UsageError(f"unknown model '{name}'", f"use one of: {', '.join(known)}")
    return known[name]
