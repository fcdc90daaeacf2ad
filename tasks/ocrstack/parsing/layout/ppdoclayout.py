"""Layout kind ``pp-doclayout-v3``: PP-DocLayoutV3 through transformers (model_type ``pp_doclayout_v3``).

transformers >= 5.21 ships ``PPDocLayoutV3ForObjectDetection`` and its image processor,
whose ``post_process_object_detection`` returns per image ``scores``, ``labels``, ``boxes``
(x0, y0, x1, y1 in the ``target_sizes`` pixels), ``polygon_points`` and ``order_seq`` --
the model's own reading order, already sorted. Label names come from the checkpoint's
``config.json`` ``id2label`` and are normalised with the ``pp-doclayout`` table of
``data/layout_labels.yaml``. The checkpoint directory comes from ``--layout-model`` or
``OCR_LAYOUT_MODEL_DIR`` and is loaded with ``local_files_only=True`` (never downloads).
Runs on CPU unless ``device`` says otherwise.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ocrstack.core.errors import ConfigError
from ocrstack.parsing.engines import LayoutProvider
from ocrstack.parsing.layout import model_dirs
from ocrstack.parsing.layout.labels import normalise
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.types import Block, PageImage

#: Score threshold for post-processing (the transformers model-doc example uses 0.5).
THRESHOLD = 0.5


class PPDocLayoutV3Provider(LayoutProvider):
    """:class:`~ocrstack.parsing.engines.LayoutProvider` over a transformers PP-DocLayoutV3 checkpoint."""

    name = "pp-doclayout-v3"
    gives_order = True

    def __init__(self, model_dir: Path, threshold: float = THRESHOLD, device: str = "cpu") -> None:
        """Load the checkpoint.

        Raises:
            ConfigError: wrong kind of directory (Paddle inference dir, other model type),
                or transformers/torch missing.
        """
        found = model_dirs.kind(model_dir)
        if found == "paddle":
            raise ConfigError(
                f"{model_dir} is a Paddle inference directory (inference.pdiparams/.json/.yml), "
                "not a transformers checkpoint",
                "use --layout paddlex for it (needs paddlex), or pass a transformers PP-DocLayoutV3 "
                "checkpoint (config.json with model_type pp_doclayout_v3 + model.safetensors)",
            )
        mtype = model_dirs.model_type(model_dir)
        if mtype != model_dirs.TRANSFORMERS_MODEL_TYPE:
            raise ConfigError(
                f"{model_dir} is not a PP-DocLayoutV3 transformers checkpoint "
                f"(config.json model_type: {mtype!r}, expected 'pp_doclayout_v3')",
                "pass the directory holding the PP-DocLayoutV3 config.json and model.safetensors",
            )
        try:
            import torch
            from transformers import AutoImageProcessor, AutoModelForObjectDetection
        except ImportError as exc:
            raise ConfigError(
                f"--layout pp-doclayout-v3 needs torch and transformers>=5.21 ({exc})",
                "install the tf extra: pip install 'ocrstack[tf]'",
            ) from exc
        self.model_dir = model_dir
        self.threshold = threshold
        self._torch = torch
        self.processor = AutoImageProcessor.from_pretrained(model_dir, local_files_only=True)
        self.model = (
            AutoModelForObjectDetection.from_pretrained(model_dir, local_files_only=True).to(device).eval()
        )
        self.device = device
        self.id2label = {int(k): str(v) for k, v in self.model.config.id2label.items()}
        self._lock = threading.Lock()

    def model_info(self) -> dict[str, str]:
        """Checkpoint directory (for blocks.json)."""
        return {"model": str(self.model_dir)}

    def detect(self, page: PageImage) -> list[Block]:
        """Blocks in the model's reading order (``order`` 0..n-1), bbox clipped to the page."""
        w, h = page.size
        torch = self._torch
        with self._lock, torch.inference_mode():
            inputs = self.processor(images=[page.image.convert("RGB")], return_tensors="pt").to(self.device)
            outputs = self.model(**inputs)
            (res,) = self.processor.post_process_object_detection(
                outputs, threshold=self.threshold, target_sizes=[(h, w)]
            )
        blocks: list[Block] = []
        for score, label, box in zip(
            res["scores"].tolist(), res["labels"].tolist(), res["boxes"].tolist(), strict=True
        ):
            x0, y0, x1, y1 = max(0.0, box[0]), max(0.0, box[1]), min(float(w), box[2]), min(float(h), box[3])
            if x1 - x0 < 1 or y1 - y0 < 1:
                continue
            name = self.id2label.get(int(label), str(label))
            category, warning = normalise("pp-doclayout", name)
            b = Block(
                bbox=(x0, y0, x1, y1), category=category, score=float(score), order=len(blocks), label=name
            )
            if warning:
                b.warnings.append(warning)
            blocks.append(b)
        return blocks


def create(options: ParseOptions) -> PPDocLayoutV3Provider:
    """Factory: checkpoint from ``options.layout_model`` or ``$OCR_LAYOUT_MODEL_DIR``.

    Raises:
        ConfigError: no directory, a missing one, or one of the wrong kind.
    """
    return PPDocLayoutV3Provider(model_dirs.resolve(options.layout_model, "pp-doclayout-v3"))
