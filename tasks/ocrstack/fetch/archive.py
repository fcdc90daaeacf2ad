"""Safe tar extraction: the stdlib ``data`` filter (PEP 706) and a staging directory."""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from ocrstack.core.errors import InputError


def extract(tar_path: Path, dest_parent: Path) -> Path:
    """Extract ``tar_path`` into a fresh staging directory inside ``dest_parent`` and return it.

    Uses ``tarfile``'s ``data`` filter, which refuses members that would land outside the
    target (``../x``, absolute paths, links pointing out), device files and unsafe modes.
    The caller moves what it needs out of the staging dir (same filesystem, so ``os.replace``).

    Raises:
        InputError: not a tar archive, or an unsafe member (nothing is left behind).
    """
    dest_parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".extract-", dir=dest_parent))
    try:
        with tarfile.open(tar_path) as tf:
            tf.extractall(stage, filter="data")
    except tarfile.FilterError as exc:
        shutil.rmtree(stage, ignore_errors=True)
        raise InputError(
            f"{tar_path}: unsafe archive member refused ({exc})",
            "the archive tries to write outside its directory; download it again from the guide 3.4 URL",
        ) from exc
    except (tarfile.TarError, OSError) as exc:
        shutil.rmtree(stage, ignore_errors=True)
        raise InputError(f"{tar_path}: cannot extract ({exc})", "delete it and download again") from exc
    return stage


def content_root(stage: Path, required: tuple[str, ...]) -> Path | None:
    """The directory inside ``stage`` that holds every ``required`` file (top level or one folder down)."""
    candidates = [stage, *sorted(p for p in stage.iterdir() if p.is_dir())]
    for cand in candidates:
        if all((cand / f).is_file() for f in required):
            return cand
    return None


def move_into_place(src: Path, dest: Path) -> None:
    """``os.replace`` a directory to ``dest`` (which must not exist)."""
    os.replace(src, dest)
