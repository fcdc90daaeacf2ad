"""Job results in the API's shapes: the seed's ``{status, text, layout}``, Markdown, blocks JSON, zip.

The files are the ones ``ocrstack parse`` writes (``NAME.md``, ``NAME.blocks.json``,
``NAME_files/``) in the job's output directory; nothing is re-assembled here.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from ocrstack.parsing.outputs import CACHE_DIR

FORMATS = {"markdown": "text/markdown", "json": "application/json", "zip": "application/zip"}


def output_files(out_dir: Path) -> tuple[Path, Path] | None:
    """``(NAME.md, NAME.blocks.json)`` of a finished job, or None when not written."""
    for md in sorted(out_dir.glob("*.md")):
        blocks = md.with_suffix(".blocks.json")
        if blocks.is_file():
            return md, blocks
    return None


def seed_shape(status: str, markdown: str, blocks: dict[str, Any]) -> dict[str, Any]:
    """The second seed's answer (``{"status", "text", "layout": [{"type", "bbox"}]}``) plus
    ``markdown`` and the full ``blocks`` document. ``layout`` lists every block in reading order
    with its 1-based ``page``; ``bbox`` is (x0, y0, x1, y1) in page pixels at the job's DPI."""
    layout = [
        {"type": b["category"], "bbox": b["bbox"], "page": p["page"], "order": b["order"]}
        for p in blocks.get("pages", [])
        for b in p.get("blocks", [])
    ]
    return {
        "status": "success" if status == "done" else status,
        "text": markdown,
        "layout": layout,
        "markdown": markdown,
        "blocks": blocks,
    }


def load(out_dir: Path) -> tuple[str, dict[str, Any]] | None:
    """``(markdown, blocks)`` of a finished job, or None."""
    files = output_files(out_dir)
    if files is None:
        return None
    md, blocks = files
    return md.read_text(encoding="utf-8"), json.loads(blocks.read_text(encoding="utf-8"))


def pick_format(query: str | None, accept: str | None) -> str | None:
    """``?format=`` wins, else the first known media type in ``Accept``, else Markdown; None if unknown."""
    if query:
        return query if query in FORMATS else None
    for part in (accept or "").split(","):
        media = part.split(";")[0].strip()
        for name, mtype in FORMATS.items():
            if media == mtype:
                return name
    return "markdown"


def build_zip(out_dir: Path, target: Path) -> Path:
    """Zip ``NAME.md``, ``NAME.blocks.json`` and ``NAME_files/`` (figures) into ``target``, written to
    disk file by file (never whole in memory); the page cache is left out."""
    tmp = target.with_suffix(".part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(out_dir.rglob("*")):
            rel = f.relative_to(out_dir)
            if f.is_file() and rel.parts[0] != CACHE_DIR and f != target and f.suffix != ".part":
                zf.write(f, rel.as_posix())
    tmp.replace(target)
    return target
