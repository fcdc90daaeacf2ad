"""Recognizers behind one interface (:class:`ocrstack.parsing.types.Recognizer`), chosen by kind.

Each kind maps to ``module:factory``; the factory takes :class:`ocrstack.parsing.options.ParseOptions`.
"""

from __future__ import annotations

from ocrstack.parsing import registry
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.types import Recognizer

RECOGNIZERS: dict[str, str] = {
    "rapidocr": "ocrstack.parsing.recognition.rapidocr:create",
    "openai": "ocrstack.parsing.recognition.openai:create",
}


def create(kind: str, options: ParseOptions) -> Recognizer:
    """Return the recognizer for ``kind``.

    Raises:
        UsageError: unknown kind; the message lists the valid ones.
    """
    return registry.create(RECOGNIZERS, kind, "--recognizer", options)
