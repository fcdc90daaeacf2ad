"""Engines chosen by kind (layout providers, recognizers): one lookup for every registry.

A registry maps a kind to ``"module:factory"``; modules are imported only when chosen,
so a missing optional engine only matters for the kind that needs it (pattern from
docling ``models/factories/base_factory.py``).
"""

from __future__ import annotations

import importlib
from typing import Any

from ocrstack.core.errors import UsageError


def create(table: dict[str, str], kind: str, flag: str, *args: Any) -> Any:
    """Import and call the factory registered for ``kind`` with ``args``.

    Raises:
        UsageError: unknown kind; the message names ``flag`` and lists the valid kinds.
    """
    if kind not in table:
        what = flag.removeprefix("--")
        raise UsageError(f"unknown {what} kind '{kind}'", f"use {flag} with one of: {', '.join(table)}")
    module, _, factory = table[kind].partition(":")
    return getattr(importlib.import_module(module), factory)(*args)
