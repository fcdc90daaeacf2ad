"""Layout providers behind one interface (:class:`ocrstack.parsing.engines.LayoutProvider`), chosen by kind.

Each kind maps to ``module:factory``; the factory takes :class:`ocrstack.parsing.options.ParseOptions`
and returns a provider. Modules are imported only when chosen, so a missing
optional engine (paddlex, transformers) only matters for the kind that needs it.
"""

from __future__ import annotations

from ocrstack.parsing import registry
from ocrstack.parsing.engines import LayoutProvider
from ocrstack.parsing.options import ParseOptions

LAYOUTS: dict[str, str] = {
    "rapid-layout": "ocrstack.parsing.layout.rapid:create",
    "pp-doclayout-v3": "ocrstack.parsing.layout.ppdoclayout:create",
    "paddlex": "ocrstack.parsing.layout.paddlex:create",
    "none": "ocrstack.parsing.layout.whole_page:create",
    "vlm": "ocrstack.parsing.layout.vlm:create",
}


def create(kind: str, options: ParseOptions) -> LayoutProvider:
    """Return the layout provider for ``kind``.

    ``kind`` must be registered here (checked by :func:`ocrstack.parsing.options.validate`).
    """
    return registry.create(LAYOUTS, kind, options)
