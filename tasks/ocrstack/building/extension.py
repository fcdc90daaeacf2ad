"""``python -m ocrstack.building.extension NAME``: is vLLM's built extension file there?

Guide 3.2: this branch's extension is ``_C_stable_libtorch.abi3.so``; never judge the
build by ``import vllm._C``. The package is located with ``importlib.util.find_spec``,
which does not import vLLM. Prints the file's path (exit 0) or why not (exit 1).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def find_extension(name: str, package: str = "vllm") -> Path | None:
    """Return ``<package dir>/<name>`` if that file exists, else None (the package is not imported)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for d in spec.submodule_search_locations:
        p = Path(d) / name
        if p.is_file():
            return p
    return None


def main(argv: list[str] | None = None) -> int:
    """CLI entry: ``NAME [PACKAGE]``."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m ocrstack.building.extension NAME [PACKAGE]", file=sys.stderr)
        return 2
    package = args[1] if len(args) > 1 else "vllm"
    found = find_extension(args[0], package)
    if found is None:
        print(f"{args[0]} not found in package {package}", file=sys.stderr)
        return 1
    print(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
