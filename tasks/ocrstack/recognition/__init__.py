"""Recognizers behind one interface (:class:`ocrstack.types.Recognizer`), chosen by kind.

Each kind maps to ``module:factory``; the factory takes :class:`ocrstack.options.ParseOptions`.
"""

from __future__ import annotations

from ocrstack import registry
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
    return registry.create(RECOGNIZERS, kind, "--recognizer", options)
