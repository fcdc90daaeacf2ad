"""Engines chosen by kind (layout providers, recognizers): one lookup for every registry.

A registry maps a kind to ``"module:factory"``; modules are imported only when chosen,
so a missing optional engine only matters for the kind that needs it (pattern from
docling ``models/factories/base_factory.py``).
"""

from __future__ import annotations

import importlib
from typing import Any


def create(table: dict[str, str], kind: str, *args: Any) -> Any:
    """Import and call the factory registered for ``kind`` with ``args``.

    ``kind`` is one of ``table`` (the option declaration lists the kinds as its choices, and
    :func:`ocrstack.parsing.options.validate` refuses others before any engine is made).

    Raises:
        KeyError: ``kind`` is not registered (options were not validated).
    """
    module, _, factory = table[kind].partition(":")
    return getattr(importlib.import_module(module), factory)(*args)
