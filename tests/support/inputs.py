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


def paper(size: tuple[int, int]) -> Image.Image:
    """A white RGB page image of ``size`` (w, h) px with one black pixel at its top-left corner:
    it has ink (:func:`ocrstack.parsing.ink.has_ink`), so it goes through layout and recognition
    like a page with content, where an all-white page is skipped as blank."""
    image = Image.new("RGB", size, "white")
    image.putpixel((0, 0), (0, 0, 0))
    return image
