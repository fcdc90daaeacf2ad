"""Crop fitting shared by the layout and recognition stages (issue 14, MinerU-Diffusion).

Both functions port opendatalab/MinerU-Diffusion ``scripts/run_end2end.py`` at commit 8d456f1
(``crop_block_image``'s rotation and ``resize_by_need``); pure PIL, no I/O.
"""

from __future__ import annotations

import math

from PIL import Image

#: ``run_end2end.py`` MIN_IMAGE_EDGE and MAX_IMAGE_EDGE_RATIO.
MIN_IMAGE_EDGE = 28
MAX_IMAGE_EDGE_RATIO = 50


def rotate(image: Image.Image, angle: int | None) -> Image.Image:
    """Turn ``image`` ``angle`` degrees counter-clockwise (expand) for 90/180/270; otherwise unchanged."""
    if angle in (90, 180, 270):
        return image.rotate(angle, expand=True)
    return image


def resize_by_need(
    image: Image.Image, min_edge: int = MIN_IMAGE_EDGE, max_edge_ratio: int = MAX_IMAGE_EDGE_RATIO
) -> Image.Image:
    """Fit a block crop for the model as ``run_end2end.resize_by_need`` does.

    Long/short edge ratio above ``max_edge_ratio``: paste the crop centred on a white canvas whose
    short edge is ``ceil(long / max_edge_ratio)``. Then a short edge below ``min_edge`` px is
    scaled up (bicubic, rounded) so it is ``min_edge``. Other crops are returned unchanged.
    """
    if max(image.size) / min(image.size) > max_edge_ratio:
        width, height = image.size
        if width > height:
            new_w, new_h = width, math.ceil(width / max_edge_ratio)
        else:
            new_w, new_h = math.ceil(height / max_edge_ratio), height
        canvas = Image.new(image.mode, (new_w, new_h), (255, 255, 255))
        canvas.paste(image, (int((new_w - width) / 2), int((new_h - height) / 2)))
        image = canvas
    if min(image.size) < min_edge:
        scale = min_edge / min(image.size)
        image = image.resize(
            (round(image.width * scale), round(image.height * scale)), Image.Resampling.BICUBIC
        )
    return image
