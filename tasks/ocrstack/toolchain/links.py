"""Safe symlinks for the pip CUDA toolkit fix-up: never dangling, atomic, never over a regular file."""

from __future__ import annotations

import os
from pathlib import Path

from ocrstack.core.results import Check, Status


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve(strict=True) == b.resolve(strict=True)
    except (FileNotFoundError, RuntimeError):
        return False


def atomic_symlink(link: Path, target: str) -> None:
    """Point ``link`` at ``target`` atomically (a temporary link, then ``os.replace``)."""
    tmp = link.with_name(f".{link.name}.ocrstack-tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)


def ensure_link(root: Path, rel_link: str, target: str, *, dry_run: bool = False) -> tuple[Check, bool]:
    """Make ``root/rel_link`` a symlink to ``target`` (relative to the link's directory, or absolute).

    Returns ``(check, changed)``. Never creates a dangling link: when ``target`` does
    not exist the check fails and nothing is written. An existing link resolving to the
    same file is left as is; a dangling or wrong link is replaced atomically; a regular
    file or directory at ``rel_link`` is left alone with a warning.
    """
    link = root / rel_link
    # normpath: the link's own directory may not exist yet (nvvm/bin), so resolve '..' textually
    dest = Path(target) if os.path.isabs(target) else Path(os.path.normpath(link.parent / target))
    if not dest.exists():
        return Check(
            rel_link,
            Status.FAIL,
            f"target {dest} does not exist; no link made",
            "install the pinned pip CUDA wheels (guide 3.2): ocrstack versions show",
        ), False
    if link.is_symlink():
        if _same_file(link, dest):
            return Check(rel_link, Status.PASS, f"unchanged: -> {os.readlink(link)}"), False
        old = os.readlink(link)
        if not dry_run:
            atomic_symlink(link, target)
        verb = "would replace" if dry_run else "replaced"
        return Check(
            rel_link,
            Status.PASS,
            f"{verb}: -> {target} (was -> {old}, {'dangling' if not link.exists() else 'another file'})",
        ), True
    if link.exists():
        if _same_file(link, dest):  # e.g. lib64 is already the same directory
            return Check(rel_link, Status.PASS, "unchanged: already the same file"), False
        return Check(
            rel_link,
            Status.WARN,
            f"a regular {'directory' if link.is_dir() else 'file'} is there; left alone",
            f"remove {link} and rerun if it is wrong",
        ), False
    if not dry_run:
        link.parent.mkdir(parents=True, exist_ok=True)
        atomic_symlink(link, target)
    return Check(rel_link, Status.PASS, f"{'would create' if dry_run else 'created'}: -> {target}"), True
