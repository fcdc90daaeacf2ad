"""Layout kind ``paddlex``: the Paddle inference directory the guide downloads, through PaddleX.

Guide 3.4 downloads ``PP-DocLayoutV3_infer.tar`` and sets ``OCR_LAYOUT_MODEL_DIR`` to the
unpacked directory, which must hold ``inference.pdiparams``, ``inference.json`` and
``inference.yml`` -- "a Paddle inference directory, not a safetensors directory". The
directory is checked before PaddleX is imported, so a wrong directory gets that
explanation even where PaddleX is absent. PaddleX (``sdk.paddlex`` in envs/versions.yaml)
and paddlepaddle are optional: without them this kind fails with the install command.
Model loading: ``paddlex.create_model(model_name="PP-DocLayoutV3", model_dir=DIR)``
(PaddleX 3.x "Layout Detection" module docs); each result's ``boxes`` entries carry
``label``, ``score`` and ``coordinate`` (x0, y0, x1, y1 in input pixels), and ``order``
when the model predicts reading order.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from ocrstack import versions
from ocrstack.core.errors import ConfigError
from ocrstack.parsing.engines import LayoutProvider
from ocrstack.parsing.layout import model_dirs
from ocrstack.parsing.layout.labels import normalise
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.types import Block, PageImage

MODEL_NAME = "PP-DocLayoutV3"


def check_inference_dir(path: Path) -> None:
    """Raise :class:`ConfigError` with the guide 3.4 explanation unless ``path`` is a Paddle inference dir."""
    missing = model_dirs.missing_paddle_files(path)
    if not missing:
        return
    what = (
        "a safetensors/transformers checkpoint" if model_dirs.kind(path) == "transformers" else "incomplete"
    )
    raise ConfigError(
        f"{path} is not a Paddle inference directory ({what}; missing {', '.join(missing)}). "
        "Guide 3.4: OCR_LAYOUT_MODEL_DIR must be a Paddle inference directory holding inference.pdiparams, "
        "inference.json and inference.yml, not a safetensors directory",
        f"download it: {model_dirs.GUIDE_DOWNLOAD}; "
        "a transformers checkpoint works with --layout pp-doclayout-v3",
    )


class PaddleXLayout(LayoutProvider):
    """:class:`~ocrstack.parsing.engines.LayoutProvider` over ``paddlex.create_model`` (PP-DocLayoutV3)."""

    name = "paddlex"

    def __init__(self, model_dir: Path, device: str = "cpu") -> None:
        check_inference_dir(model_dir)
        try:
            import paddlex
        except ImportError as exc:
            raise ConfigError(
                f"--layout paddlex needs PaddleX ({exc})",
                f"pip install paddlex=={versions.pin('sdk.paddlex')} "
                f"paddlepaddle=={versions.pin('sdk.paddlepaddle')} (CPU; guide 3.1), "
                "or use --layout rapid-layout",
            ) from exc
        self.model_dir = model_dir
        self.model = paddlex.create_model(model_name=MODEL_NAME, model_dir=str(model_dir), device=device)
        self.gives_order = True
        self._lock = threading.Lock()

    def model_info(self) -> dict[str, str]:
        """Inference directory (for blocks.json)."""
        return {"model": str(self.model_dir)}

    def detect(self, page: PageImage) -> list[Block]:
        """Blocks from PaddleX; in the model's ``order`` when present, else detection order."""
        bgr = np.ascontiguousarray(np.asarray(page.image.convert("RGB"))[:, :, ::-1])
        with self._lock:
            results = list(self.model.predict(bgr, batch_size=1))
        boxes = list(results[0]["boxes"]) if results else []
        if boxes and all(b.get("order") is not None for b in boxes):
            boxes.sort(key=lambda b: b["order"])
        else:
            self.gives_order = False
        w, h = page.size
        blocks: list[Block] = []
        for b in boxes:
            x0, y0, x1, y1 = (float(v) for v in b["coordinate"])
            x0, y0, x1, y1 = max(0.0, x0), max(0.0, y0), min(float(w), x1), min(float(h), y1)
            if x1 - x0 < 1 or y1 - y0 < 1:
                continue
            category, warning = normalise("pp-doclayout", str(b["label"]))
            block = Block((x0, y0, x1, y1), category, float(b["score"]), len(blocks), str(b["label"]))
            if warning:
                block.warnings.append(warning)
            blocks.append(block)
        return blocks


def create(options: ParseOptions) -> PaddleXLayout:
    """Factory: inference directory from ``options.layout_model`` or ``$OCR_LAYOUT_MODEL_DIR``.

    Raises:
        ConfigError: no/missing/wrong directory (guide 3.4 explanation), or PaddleX absent.
    """
    return PaddleXLayout(model_dirs.resolve(options.layout_model, "paddlex"))
