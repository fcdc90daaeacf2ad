"""Whether a page image carries any ink: a page with none is not sent to layout or recognition.

Cost follows content (issue 25 item 2): a blank page rendered at 200 DPI once cost a layout
pass, an orientation read and, because the probe detection found no line, a second text
detection at full size (seconds of CPU for nothing). A page whose darkest pixel is no darker
than :data:`BLANK_MIN_GRAY` has nothing a layout model or recognizer could find; any speck
darker than that sends the page the usual way, so a scanned blank page with dust costs what it
did and nothing readable is ever skipped.
"""

from __future__ import annotations

from PIL import Image

#: Darkest 8-bit grey (0 black .. 255 white) a page may hold and still count as blank: 230 is a
#: contrast of under 10 % against white paper; anti-aliased text of any size has core pixels far
#: darker (black text renders at 0-60, the light grey of a running head at 150-190).
BLANK_MIN_GRAY = 230

#: The page note blocks.json carries for a page that was found blank.
BLANK_NOTE = f"blank page: no pixel darker than {BLANK_MIN_GRAY} of 255; layout and recognition skipped"


def grey(image: Image.Image) -> Image.Image:
    """``image`` (any Pillow mode) in 8-bit grey (mode ``L``, ``image`` itself when it is one),
    transparent pixels as white paper."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        paper = Image.new("RGBA", image.size, "white")
        image = Image.alpha_composite(paper, image.convert("RGBA"))
    return image if image.mode == "L" else image.convert("L")


def has_ink(image: Image.Image) -> bool:
    """True when ``image`` (any Pillow mode, page-sized; :func:`grey` of it is measured as it
    is) has a pixel darker than :data:`BLANK_MIN_GRAY` in 8-bit grey; transparent pixels count
    as white paper."""
    darkest, _ = grey(image).getextrema()
    return darkest < BLANK_MIN_GRAY
