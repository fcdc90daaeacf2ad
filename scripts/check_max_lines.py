#!/usr/bin/env python3
"""Fail when a Python module is longer than the limit (issue 9: modules under 400 lines).

Usage::

    .venv-dev/bin/python scripts/check_max_lines.py              # tasks/ocrstack, limit 400
    .venv-dev/bin/python scripts/check_max_lines.py --max 300 DIR [DIR ...]

Every ``*.py`` file under each DIR (default: ``tasks/ocrstack`` of this checkout) is counted as
``len(text.splitlines())``, the number ``wc -l`` gives for a file that ends with a newline. A
module with more than ``--max`` lines is listed as ``PATH: N lines (limit M)``, largest first,
and the exit code is 1; otherwise one ``ok`` line names the largest module and the exit code is 0.
The habit comes from docling's ``scripts/check_max_lines.py``; ``tests/test_architecture.py``
runs this script in the normal test suite (and so in ``.ci/run``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: issue 9 / the developers' brief: "modules under 400 lines"
DEFAULT_MAX = 400


def count_lines(path: Path) -> int:
    """Lines of ``path`` as ``wc -l`` counts them for a newline-terminated file (UTF-8, errors replaced)."""
    return len(path.read_text(encoding="utf-8", errors="replace").splitlines())


def modules(roots: list[Path]) -> list[Path]:
    """Every ``*.py`` file under ``roots``, sorted, skipping ``__pycache__`` and hidden directories.

    Raises:
        FileNotFoundError: a root does not exist (the message names it).
    """
    found: list[Path] = []
    for root in roots:
        if not root.exists():
            raise FileNotFoundError(f"{root}: no such directory")
        files = [root] if root.is_file() else sorted(root.rglob("*.py"))
        for f in files:
            rel = f.relative_to(root).parts if f != root else ()
            if any(p == "__pycache__" or p.startswith(".") for p in rel[:-1]):
                continue
            found.append(f)
    return found


def too_long(roots: list[Path], limit: int) -> tuple[list[tuple[Path, int]], tuple[Path, int] | None, int]:
    """``(over, largest, count)``: modules over ``limit`` lines (largest first), the largest module
    with its line count (None when there is no module), and how many modules were counted."""
    sizes = [(f, count_lines(f)) for f in modules(roots)]
    over = sorted((s for s in sizes if s[1] > limit), key=lambda s: (-s[1], str(s[0])))
    largest = max(sizes, key=lambda s: s[1]) if sizes else None
    return over, largest, len(sizes)


def _shown(path: Path) -> str:
    """``path`` relative to the current directory when it is below it, else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    """Run the check; returns 0 (all modules within the limit), 1 (some over) or 2 (bad arguments)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=DEFAULT_MAX, help=f"line limit (default {DEFAULT_MAX})")
    ap.add_argument("roots", nargs="*", type=Path, help="directories to check (default: tasks/ocrstack)")
    args = ap.parse_args(argv)
    roots = args.roots or [ROOT / "tasks" / "ocrstack"]
    try:
        over, largest, count = too_long(roots, args.max)
    except FileNotFoundError as exc:
        print(f"check_max_lines: {exc}; pass an existing directory", file=sys.stderr)
        return 2
    for path, n in over:
        print(f"{_shown(path)}: {n} lines (limit {args.max})")
    if over:
        print(
            f"check_max_lines: {len(over)} of {count} modules over {args.max} lines; "
            "split them by responsibility (issue 9)",
            file=sys.stderr,
        )
        return 1
    where = f"; largest {_shown(largest[0])} ({largest[1]} lines)" if largest else ""
    print(f"ok: {count} modules, none over {args.max} lines{where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
