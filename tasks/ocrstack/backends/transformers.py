"""``transformers serve`` (guide 4.3): the fork in tf-ocr-env or a release with ``minicpm_ocr``.

Build ``transformers``: the installed version is versions.yaml ``transformers.fork-version``
or within ``upstream.transformers`` (the first release shipping ``minicpm_ocr`` is 5.21).
It has no ``/metrics`` queue gauges, and runs on the CPU when no GPU is free.
"""

from __future__ import annotations

from typing import ClassVar

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ocrstack import versions
from ocrstack.backends.base import Backend, Site


class Transformers(Backend):
    """``transformers serve``; flags checked against its ``--help``."""

    name: ClassVar[str] = "transformers"
    parser_check: ClassVar[str | None] = "help"

    def detect(self, site: Site) -> tuple[str | None, str]:
        """``transformers`` when the version has ``minicpm_ocr`` (fork or >= 5.21), else None."""
        ver = site.version("transformers")
        if ver is None:
            return None, f"transformers not installed {site.where}"
        fork = str(versions.pin("transformers.fork-version"))
        try:
            ok = ver == fork or Version(ver) in SpecifierSet(str(versions.pin("upstream.transformers")))
        except InvalidVersion:
            ok = False
        if ok:
            return "transformers", f"transformers {ver} {site.where}"
        need = f"{fork} or {versions.pin('upstream.transformers')}"
        return None, f"transformers {ver} {site.where} has no minicpm_ocr (need {need})"
