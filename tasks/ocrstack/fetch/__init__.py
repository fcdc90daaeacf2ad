"""``ocrstack fetch``: models (huggingface_hub / ModelScope) and the layout tarball, checked (guide 3.4).

* :func:`ocrstack.fetch.models.fetch_models` -- main model + DSpark draft into ``./models/NAME``.
* :func:`ocrstack.fetch.layout.fetch_layout` -- PP-DocLayoutV3 Paddle inference tarball.
* :mod:`ocrstack.fetch.verify` -- required files, draft sha256, same release, layout dir,
  the bad-download marker (:func:`~ocrstack.fetch.verify.bad_reason` for servers to refuse).
"""

from __future__ import annotations

from ocrstack.fetch.layout import export_line, fetch_layout
from ocrstack.fetch.models import fetch_models
from ocrstack.fetch.options import LayoutFetchOptions, ModelFetchOptions
from ocrstack.fetch.verify import bad_reason, check_layout_dir, require_layout_dir

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
