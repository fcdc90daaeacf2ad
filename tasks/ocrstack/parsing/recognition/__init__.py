"""Recognizers behind one interface (:class:`ocrstack.parsing.engines.Recognizer`), chosen by kind.

Each kind maps to ``module:factory``; the factory takes :class:`ocrstack.parsing.options.ParseOptions`.
"""

from __future__ import annotations

from ocrstack.parsing import registry
from ocrstack.parsing.engines import Recognizer
from ocrstack.parsing.options import ParseOptions

RECOGNIZERS: dict[str, str] = {
    "rapidocr": "ocrstack.parsing.recognition.rapidocr:create",
    "openai": "ocrstack.parsing.recognition.openai:create",
}


def create(kind: str, options: ParseOptions) -> Recognizer:
    """Return the recognizer for ``kind``.

    ``kind`` must be registered here (checked by :func:`ocrstack.parsing.options.validate`).
    """
    return registry.create(RECOGNIZERS, kind, options)
