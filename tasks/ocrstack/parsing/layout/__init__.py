"""Layout providers behind one interface (:class:`ocrstack.parsing.engines.LayoutProvider`), chosen by kind.

Each kind maps to ``module:factory`` in :mod:`ocrstack.parsing.engines.kinds`; the factory takes
:class:`ocrstack.parsing.options.ParseOptions`
and returns a provider. Modules are imported only when chosen, so a missing
optional engine (paddlex, transformers) only matters for the kind that needs it.
"""

from __future__ import annotations

from ocrstack.parsing.engines import LayoutProvider, registry
from ocrstack.parsing.engines.kinds import LAYOUTS
from ocrstack.parsing.options import ParseOptions

__all__ = ["LAYOUTS", "create"]


def create(kind: str, options: ParseOptions) -> LayoutProvider:
    """Return the layout provider for ``kind``.

    ``kind`` must be in :mod:`ocrstack.parsing.engines.kinds` (checked by
    :func:`ocrstack.parsing.options.validate`).
    """
    return registry.create(LAYOUTS, kind, options)
