"""One parsed page as stored in the resume cache and in ``NAME.blocks.json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ocrstack.parsing.types import Block, Category

#: Start of the warning on a header/footer/page-number block that a cropping recognizer was not
#: asked to read (no --keep-paratext): its empty text is expected, not an "empty block".
SKIPPED_PARATEXT = "paratext skipped"


def skipped(block: Block) -> bool:
    """True when ``block`` was deliberately not recognised (see :data:`SKIPPED_PARATEXT`)."""
    return any(w.startswith(SKIPPED_PARATEXT) for w in block.warnings)


@dataclass
class PageResult:
    """Layout + recognition result of one page.

    Attributes:
        index: 0-based page (or TIFF frame) index.
        size: (width, height) in pixels of the image the bboxes refer to (after any rotation).
        dpi: render resolution of a PDF page, or the DPI a raster file declares (None when it
            declares none).
        rotation: degrees the page was turned counter-clockwise before layout (0/90/180/270).
        blocks: in reading order (``order`` 0..n-1).
        images: ``{block order: path relative to the output dir}`` for saved figure crops.
        structured: the recognizer returns OTSL/HTML tables and LaTeX formulas (openai),
            not plain OCR text (rapidocr).
        timings: seconds per stage (``render``, ``layout``, ``recognize``, ``total``).
        notes: messages about the page (downscaled, rotated, ...).
        error: why the page failed (then ``blocks`` is empty), else None.
        text_layer: the text-layer verdict of the page (``sound``, ``reasons``, character
            ``counts``, ``ocr_sample_agreement``; :mod:`ocrstack.parsing.textlayer.soundness`),
            or None when it was not read.

    A block whose recognition failed carries ``"status": "failed"`` and ``"error"`` in the JSON
    (absent = read); such a page is partial (:attr:`failed_blocks`).
    """

    index: int
    size: tuple[int, int]
    dpi: float | None = None
    rotation: int = 0
    blocks: list[Block] = field(default_factory=list)
    images: dict[int, str] = field(default_factory=dict)
    structured: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    text_layer: dict[str, Any] | None = None

    @property
    def failed_blocks(self) -> list[Block]:
        """Blocks whose recognition failed (``Block.error`` set): the page is partial."""
        return [b for b in self.blocks if b.error]

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form (``page`` is 1-based for people, ``index`` 0-based)."""
        return {
            "page": self.index + 1,
            "index": self.index,
            "size": list(self.size),
            "dpi": self.dpi,
            "rotation": self.rotation,
            "structured": self.structured,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "notes": list(self.notes),
            "error": self.error,
            "text_layer": self.text_layer,
            "blocks": [
                {
                    "order": b.order,
                    "category": b.category.value,
                    "label": b.label,
                    "bbox": [round(float(v), 1) for v in b.bbox],
                    "score": round(float(b.score), 4),
                    "text": b.text,
                    "warnings": list(b.warnings),
                    "source": b.source,
                    **({"rotation": b.rotation} if b.rotation else {}),
                    **({"status": "failed", "error": b.error} if b.error else {}),
                    **({"image": self.images[b.order]} if b.order in self.images else {}),
                }
                for b in self.blocks
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PageResult:
        """Inverse of :meth:`to_json`. Raises KeyError/ValueError on a malformed entry."""
        blocks = [
            Block(
                bbox=tuple(float(v) for v in b["bbox"]),  # type: ignore[arg-type]
                category=Category(b["category"]),
                score=float(b["score"]),
                order=int(b["order"]),
                label=str(b.get("label", "")),
                text=str(b.get("text", "")),
                warnings=list(b.get("warnings", [])),
                rotation=int(b.get("rotation", 0)),
                source=str(b.get("source", "")),
                error=b.get("error") if b.get("status") == "failed" else None,
            )
            for b in data["blocks"]
        ]
        images = {int(b["order"]): b["image"] for b in data["blocks"] if "image" in b}
        return cls(
            index=int(data["index"]),
            size=(int(data["size"][0]), int(data["size"][1])),
            dpi=data.get("dpi"),
            rotation=int(data.get("rotation", 0)),
            blocks=blocks,
            images=images,
            structured=bool(data.get("structured", False)),
            timings={k: float(v) for k, v in data.get("timings", {}).items()},
            notes=list(data.get("notes", [])),
            error=data.get("error"),
            text_layer=data.get("text_layer"),
        )
