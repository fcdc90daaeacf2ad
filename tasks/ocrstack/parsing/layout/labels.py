"""Provider label -> normalised :class:`ocrstack.parsing.types.Category`, from ``data/layout_labels.yaml``."""

from __future__ import annotations

from functools import lru_cache

from ocrstack.core import paths
from ocrstack.core.errors import ConfigError
from ocrstack.parsing.types import Category


@lru_cache(maxsize=1)
def tables() -> dict[str, dict[str, Category]]:
    """Return ``{table_name: {provider_label: Category}}`` from ``data/layout_labels.yaml``.

    Raises:
        ConfigError: the file is missing, not schema 1, or names an unknown category.
    """
    path = paths.data_file("layout_labels.yaml")
    raw = paths.read_yaml(path, "the layout label table", "reinstall ocrstack")
    if not isinstance(raw, dict) or raw.get("schema") != 1:
        raise ConfigError(f"{path}: expected 'schema: 1'", "restore tasks/ocrstack/data/layout_labels.yaml")
    out: dict[str, dict[str, Category]] = {}
    for name, table in raw.items():
        if name == "schema":
            continue
        try:
            out[name] = {str(k).lower(): Category(v) for k, v in table.items()}
        except ValueError as exc:
            raise ConfigError(
                f"{path}: table '{name}': {exc}", f"use one of {[c.value for c in Category]}"
            ) from exc
    return out


def normalise(table: str, label: str) -> tuple[Category, str | None]:
    """Map a provider ``label`` through ``table``; returns (category, warning or None).

    Unknown labels become TEXT with a warning so their content is still read.
    """
    found = tables()[table].get(label.lower().strip())
    if found is None:
        return Category.TEXT, f"unknown layout label '{label}' treated as text"
    return found, None
