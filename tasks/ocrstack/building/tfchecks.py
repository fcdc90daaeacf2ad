"""``python tfchecks.py extra NAME`` / ``python tfchecks.py arch MODEL_TYPE``: checks of the tf plan.

Run by path in the *target* interpreter (the tf environment), so they import nothing from
ocrstack: the standard library, ``packaging`` (a transformers dependency) and transformers.

- ``extra serving``: every requirement of ``transformers[serving]`` is installed in a
  satisfying version (guide 3.3 installs ``-e "<TRANSFORMERS_SRC>[serving]"`` for
  ``transformers serve``). Exit 0, else the gaps are printed and the exit code is 1.
- ``arch minicpm_ocr``: transformers' auto classes know the model type (guide 8: "model type
  'minicpm_ocr' ... does not recognize this architecture" = not the feat-ocr fork). Exit 0/1.
"""

from __future__ import annotations

import importlib.metadata as md
import sys


def extra_gaps(extra: str, dist: str = "transformers") -> tuple[list[str], int]:
    """Return ``(gaps, n)``: unmet requirements of ``dist[extra]`` and how many it declares.

    Base requirements (no ``extra`` in their marker) are not considered. A dist that declares
    no such extra gives one gap saying so.
    """
    from packaging.requirements import Requirement

    gaps: list[str] = []
    n = 0
    for spec in md.requires(dist) or []:
        req = Requirement(spec)
        mk = req.marker
        if mk is None or "extra" not in str(mk) or not mk.evaluate({"extra": extra}):
            continue
        n += 1
        try:
            found = md.version(req.name)
        except md.PackageNotFoundError:
            gaps.append(f"{req.name} missing")
            continue
        if not req.specifier.contains(found, prereleases=True):
            gaps.append(f"{req.name} {found} not {req.specifier}")
    if n == 0:
        gaps.append(f"{dist} declares no [{extra}] extra")
    return gaps, n


def main(argv: list[str] | None = None) -> int:
    """CLI entry (module docstring)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("extra", "arch"):
        print("usage: tfchecks.py extra NAME | arch MODEL_TYPE", file=sys.stderr)
        return 2
    if args[0] == "extra":
        gaps, n = extra_gaps(args[1])
        print("; ".join(gaps) if gaps else f"transformers[{args[1]}]: {n} requirements satisfied")
        return 1 if gaps else 0
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    known = args[1] in CONFIG_MAPPING_NAMES
    print(f"transformers {transformers.__version__}: {args[1]} {'known' if known else 'UNKNOWN'}")
    return 0 if known else 1


if __name__ == "__main__":
    sys.exit(main())
