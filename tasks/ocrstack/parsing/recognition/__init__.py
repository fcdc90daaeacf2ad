"""Recognizers behind one interface (:class:`ocrstack.parsing.engines.Recognizer`), chosen by kind.

Each kind maps to ``module:factory`` in :mod:`ocrstack.parsing.engines.kinds`; the factory takes
:class:`ocrstack.parsing.options.ParseOptions`.
"""

from __future__ import annotations

from ocrstack.parsing.engines import Recognizer, registry
from ocrstack.parsing.engines.kinds import RECOGNIZERS
from ocrstack.parsing.options import ParseOptions

__all__ = ["RECOGNIZERS", "create"]


def create(kind: str, options: ParseOptions) -> Recognizer:
    """Return the recognizer for ``kind``.

    ``kind`` must be in :mod:`ocrstack.parsing.engines.kinds` (checked by
    :func:`ocrstack.parsing.options.validate`).
    """
    return registry.create(RECOGNIZERS, kind, options)
