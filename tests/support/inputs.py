"""Small generated inputs shared by the parse tests."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw


def multipage_tiff(path: Path, n: int) -> Path:
    """Write an ``n``-frame TIFF (200x160 px, one coloured box per frame, each frame different)."""
    frames = []
    for k in range(n):
        im = Image.new("RGB", (200, 160), "white")
        ImageDraw.Draw(im).rectangle((20, 90, 180, 150), fill=(k * 40, 80, 160))
        frames.append(im)
    frames[0].save(path, save_all=True, append_images=frames[1:])
    return path
