"""``ocrstack fetch``: models (huggingface_hub / ModelScope) and the layout tarball, checked (guide 3.4).

* :func:`ocrstack.fetch.models.fetch_models` -- main model + DSpark draft into ``./models/NAME``.
* :func:`ocrstack.fetch.layout.fetch_layout` -- PP-DocLayoutV3 Paddle inference tarball.
* :mod:`ocrstack.fetch.verify` -- required files, draft sha256, same release, layout dir,
  the bad-download marker (:func:`~ocrstack.fetch.verify.bad_reason` for servers to refuse).
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each re-exported name -> the module that defines it, imported on first use (PEP 562), so that
#: importing one light submodule (options, constants) does not load the whole package.
_HOME = {
    "bad_reason": "ocrstack.fetch.verify",
    "check_layout_dir": "ocrstack.fetch.verify",
    "export_line": "ocrstack.fetch.layout",
    "fetch_layout": "ocrstack.fetch.layout",
    "fetch_models": "ocrstack.fetch.models",
    "LayoutFetchOptions": "ocrstack.fetch.options",
    "ModelFetchOptions": "ocrstack.fetch.options",
    "require_layout_dir": "ocrstack.fetch.verify",
}


__all__ = [
    "LayoutFetchOptions",
    "ModelFetchOptions",
    "bad_reason",
    "check_layout_dir",
    "export_line",
    "fetch_layout",
    "fetch_models",
    "require_layout_dir",
]


def __getattr__(name: str) -> Any:
    """Import ``name``'s defining module on first access (:data:`_HOME`)."""
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
