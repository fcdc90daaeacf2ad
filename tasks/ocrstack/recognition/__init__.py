"""Recognizers behind one interface (:class:`ocrstack.types.Recognizer`), chosen by kind.

Each kind maps to ``module:factory``; the factory takes :class:`ocrstack.options.ParseOptions`.
"""

from __future__ import annotations

import importlib

from ocrstack.errors import UsageError
from ocrstack.options import ParseOptions
from ocrstack.types import Recognizer

RECOGNIZERS: dict[str, str] = {
    "rapidocr": "ocrstack.recognition.rapidocr:create",
    "openai": "ocrstack.recognition.openai:create",
}


def create(kind: str, options: ParseOptions) -> Recognizer:
    """Return the recognizer for ``kind``.

    Raises:
        UsageError: unknown kind; the message lists the valid ones.
    """
    if kind not in RECOGNIZERS:
        raise UsageError(f"unknown recognizer kind '{kind}'", f"use --recognizer with one of: {', '.join(RECOGNIZERS)}")
    module, _, factory = RECOGNIZERS[kind].partition(":")
    return getattr(importlib.import_module(module), factory)(options)
