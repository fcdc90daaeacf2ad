"""Locations of the project's data files.

``envs/versions.yaml`` lives at the repository root (design card). In an
editable install it is found by walking up from this package; a wheel carries a
copy at ``ocrstack/data/versions.yaml`` (pyproject force-include).
``OCRSTACK_VERSIONS`` overrides both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from ocrstack.core.errors import ConfigError, OcrstackError

PACKAGE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = PACKAGE_DIR / "data"


def repo_root() -> Path | None:
    """Return the checkout root (the directory holding ``envs/versions.yaml``), or None in a wheel."""
    for parent in PACKAGE_DIR.parents:
        if (parent / "envs" / "versions.yaml").is_file() and (parent / "pyproject.toml").is_file():
            return parent
    return None


def versions_file() -> Path:
    """Return the path of versions.yaml: $OCRSTACK_VERSIONS, the checkout's, or the packaged copy."""
    override = os.environ.get("OCRSTACK_VERSIONS")
    if override:
        return Path(override)
    root = repo_root()
    if root is not None:
        return root / "envs" / "versions.yaml"
    return DATA_DIR / "versions.yaml"


def data_file(*parts: str) -> Path:
    """Return a file shipped inside the package under ``ocrstack/data/``."""
    return DATA_DIR.joinpath(*parts)


def read_yaml(
    path: Path | str,
    what: str,
    remedy: str = "restore it from git (or fix the syntax at the position shown)",
    error: type[OcrstackError] = ConfigError,
) -> Any:
    """Read and parse one YAML data file; every data-file loader goes through here.

    Args:
        what: what the file holds, for the message ("serve profiles", "doctor rules", ...).
        error: the error class to raise (``InputError`` for files the user passed).
    Raises:
        ``error`` (default :class:`ConfigError`): missing/unreadable file, not UTF-8, or not YAML;
        one line naming the file.
    """
    p = Path(path)
    try:
        # libyaml's loader where PyYAML has it: the same documents, parsed ~10x faster (start-up)
        return yaml.load(p.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = " ".join(str(exc).split())
        raise error(f"{p}: cannot read {what} ({reason})", remedy) from exc
