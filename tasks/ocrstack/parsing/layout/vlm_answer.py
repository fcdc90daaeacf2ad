"""Parse a MinerU-Diffusion "Layout Detection:" answer into layout boxes (pure: no I/O, no server).

Source of every rule and constant: opendatalab/MinerU-Diffusion ``scripts/run_end2end.py`` at
commit 8d456f1a4dffcf432d3fb1376beea282e982d398 (2026-04-20, "Rename layout prompt to 'Layout
Detection'"), functions ``trim_response``, ``prepare_layout_image``, ``convert_bbox``,
``parse_angle``, ``parse_layout_output`` and ``crop_block_image``:

* The whole page is sent resized to ``LAYOUT_IMAGE_SIZE`` = 1036 x 1036 (bicubic, RGB, aspect
  ratio not kept) with the prompt ``"\\nLayout Detection:"``.
* The answer is cut at the first stop string (``<|endoftext|>``, ``<|im_end|>``), then read line by
  line; a layout line is::

      <|box_start|>X0 Y0 X1 Y1<|box_end|><|ref_start|>LABEL<|ref_end|><|rotate_up|>

  with integer corners on a 0..1000 grid over the page width/height (so the 1036 px resize does not
  matter), LABEL a word (``\\w+``, lower-cased), and an optional rotation tag after the label.
* Corners may come swapped (x1 < x0): they are ordered. A zero-width/height box is dropped.
* Rotation tags: ``<|rotate_up|>`` 0, ``<|rotate_right|>`` 90, ``<|rotate_down|>`` 180,
  ``<|rotate_left|>`` 270 degrees; the crop is turned with ``PIL.Image.rotate(angle, expand=True)``
  (counter-clockwise) before the block request. No tag: no rotation.
* ``resize_by_need``: a crop whose long edge is more than 50 times its short edge is centred on a
  white canvas of ratio 50; a crop with a short edge under 28 px is scaled up (bicubic) to 28.

The repository silently skips lines it cannot read. ocrstack is strict by default (issue 14): a
line that is not a layout line, a ragged or truncated coordinate list, a missing tag, a corner
outside the 0..1000 grid or a degenerate box raises :class:`LayoutAnswerError` naming the page and
the first bad line, so a bad page fails on its own with a remedy instead of losing blocks silently.
``strict=False`` gives the repository's behaviour (skip and report).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from PIL import Image

from ocrstack.core.errors import LayoutAnswerError
from ocrstack.parsing.crops import resize_by_need, rotate

__all__ = [
    "ANGLE_MAPPING",
    "GRID",
    "LAYOUT_IMAGE_SIZE",
    "LAYOUT_RE",
    "STOP_STRINGS",
    "LayoutAnswer",
    "LayoutBox",
    "LayoutAnswerError",
    "crop_block",
    "parse_layout_answer",
    "prepare_layout_image",
    "resize_by_need",
    "rotate",
    "to_page_pixels",
    "trim_response",
]

#: ``run_end2end.py`` STOP_STRINGS: the answer ends at the first of these.
STOP_STRINGS = ("<|endoftext|>", "<|im_end|>")
#: ``run_end2end.py`` LAYOUT_IMAGE_SIZE: the page is resized to this before the layout request.
LAYOUT_IMAGE_SIZE = (1036, 1036)
#: Corners are integers on a 0..GRID grid (``convert_bbox`` divides by 1000.0).
GRID = 1000
#: ``run_end2end.py`` ANGLE_MAPPING: rotation tag -> counter-clockwise degrees for ``Image.rotate``.
ANGLE_MAPPING = {
    "<|rotate_up|>": 0,
    "<|rotate_right|>": 90,
    "<|rotate_down|>": 180,
    "<|rotate_left|>": 270,
}
#: ``run_end2end.py`` LAYOUT_RE, verbatim.
LAYOUT_RE = re.compile(
    r"^<\|box_start\|>(\d+)\s+(\d+)\s+(\d+)\s+(\d+)<\|box_end\|><\|ref_start\|>(\w+?)<\|ref_end\|>(.*)$"
)
_TAGS = ("<|box_start|>", "<|box_end|>", "<|ref_start|>", "<|ref_end|>")
_COORDS = re.compile(r"^<\|box_start\|>(.*?)<\|box_end\|>")
_REMEDY = (
    "check that the server runs MinerU-Diffusion (ocrstack serve --profile mineru-diffusion) and that the "
    "layout request was not cut at max_tokens; rerun the page (only failed pages are parsed again)"
)


@dataclass(frozen=True)
class LayoutBox:
    """One layout line: ``grid`` corners on the 0..1000 grid, ordered (x0 < x1, y0 < y1).

    Attributes:
        grid: (x0, y0, x1, y1) integers, 0..1000.
        label: the model's label, lower-cased (``text``, ``table``, ``equation``, ``image``...).
        angle: counter-clockwise degrees (0, 90, 180, 270) from the rotation tag, None without a tag.
        line: 1-based line number in the answer.
    """

    grid: tuple[int, int, int, int]
    label: str
    angle: int | None
    line: int

    @property
    def fractions(self) -> tuple[float, float, float, float]:
        """Corners as fractions of the page width/height (``convert_bbox``: value / 1000.0)."""
        return tuple(v / float(GRID) for v in self.grid)  # type: ignore[return-value]


@dataclass
class LayoutAnswer:
    """Parsed answer: ``boxes`` in answer order; ``problems`` = (line number, reason) of skipped lines."""

    boxes: list[LayoutBox] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)


def trim_response(text: str) -> str:
    """Cut ``text`` at the first stop string and strip it (``run_end2end.trim_response``)."""
    for stop in STOP_STRINGS:
        text = text.split(stop, 1)[0]
    return text.strip()


def prepare_layout_image(image: Image.Image) -> Image.Image:
    """The image sent with the layout prompt: RGB, 1036 x 1036 bicubic (``prepare_layout_image``)."""
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    return rgb.resize(LAYOUT_IMAGE_SIZE, Image.Resampling.BICUBIC)


def _angle(tail: str) -> int | None:
    for token, angle in ANGLE_MAPPING.items():  # first match in this order, as parse_angle
        if token in tail:
            return angle
    return None


def _why(line: str) -> str:
    """A one-phrase reason why ``line`` is not a layout line (for the error message)."""
    missing = [t for t in _TAGS if t not in line]
    if missing and line.startswith("<|box_start|>"):
        return f"missing {', '.join(missing)} (answer cut short?)"
    if not line.startswith("<|box_start|>"):
        return "not a layout line (expected <|box_start|>x0 y0 x1 y1<|box_end|><|ref_start|>label<|ref_end|>)"
    m = _COORDS.match(line)
    if m:
        parts = m.group(1).split()
        if len(parts) != 4:
            return f"{len(parts)} coordinates instead of 4"
        if not all(p.isdigit() for p in parts):
            return f"coordinates {m.group(1)!r} are not non-negative integers"
    return "label or tag order does not match the layout format"


def _check_line(line: str, number: int, strict: bool) -> tuple[LayoutBox | None, str | None]:
    match = LAYOUT_RE.match(line)
    if not match:
        return None, _why(line)
    x0, y0, x1, y1, label, tail = match.groups()
    coords = tuple(int(v) for v in (x0, y0, x1, y1))
    if any(c > GRID for c in coords):
        return None, f"corner outside the page (0..{GRID} grid): {' '.join(map(str, coords))}"
    ax0, ax1 = sorted((coords[0], coords[2]))
    ay0, ay1 = sorted((coords[1], coords[3]))
    if ax0 == ax1 or ay0 == ay1:
        return None, f"zero-area box {' '.join(map(str, coords))}"
    rest = tail.strip()
    if strict and rest and rest not in ANGLE_MAPPING:
        return None, f"unexpected text after the label: {rest[:40]!r}"
    return LayoutBox((ax0, ay0, ax1, ay1), label.lower(), _angle(tail), number), None


def parse_layout_answer(answer: str, *, strict: bool = True, page: str = "page") -> LayoutAnswer:
    """Parse a "Layout Detection:" answer.

    Args:
        answer: the raw message content (stop strings may be present).
        strict: raise on the first bad line (default); False skips bad lines like the repository
            and lists them in ``problems``.
        page: page name used in the error message (e.g. ``"scan.pdf page 3"``).

    Returns:
        :class:`LayoutAnswer` with boxes in answer order (the model's reading order).

    Raises:
        LayoutAnswerError: (strict) empty answer, or a line that is not a valid layout line; the
            message names ``page``, the line number, the reason and the line (shortened).
    """
    text = trim_response(answer)
    out = LayoutAnswer()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        box, problem = _check_line(line, number, strict)
        if box is not None:
            out.boxes.append(box)
            continue
        out.problems.append((number, str(problem)))
        if strict:
            shown = line if len(line) <= 120 else line[:117] + "..."
            raise LayoutAnswerError(f"{page}: layout answer line {number}: {problem}: {shown!r}", _REMEDY)
    if strict and not out.boxes:
        what = f"{page}: the layout answer has no layout lines ({len(text)} characters)"
        raise LayoutAnswerError(what, _REMEDY)
    return out


def to_page_pixels(box: LayoutBox, size: tuple[int, int]) -> tuple[float, float, float, float]:
    """Map ``box`` to page pixels: (x0, y0, x1, y1) = fractions x (width, height) of ``size``."""
    w, h = size
    fx0, fy0, fx1, fy1 = box.fractions
    return (fx0 * w, fy0 * h, fx1 * w, fy1 * h)


def crop_block(page: Image.Image, box: LayoutBox) -> Image.Image:
    """The block image as ``run_end2end.crop_block_image`` makes it, before ``resize_by_need``.

    Crop rounded outward (floor/ceil) and clamped to the page, at least 1 px wide and high, then
    turned ``box.angle`` degrees counter-clockwise (``expand=True``) when the tag is 90/180/270.
    """
    image = page if page.mode == "RGB" else page.convert("RGB")
    width, height = image.size
    fx0, fy0, fx1, fy1 = box.fractions
    left = max(0, min(width - 1, math.floor(fx0 * width)))
    top = max(0, min(height - 1, math.floor(fy0 * height)))
    right = max(left + 1, min(width, math.ceil(fx1 * width)))
    bottom = max(top + 1, min(height, math.ceil(fy1 * height)))
    cropped = image.crop((left, top, right, bottom))
    return rotate(cropped, box.angle)
