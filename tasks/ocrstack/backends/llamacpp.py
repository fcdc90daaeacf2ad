"""llama.cpp ``llama-server`` with a GGUF model and its ``--mmproj`` projector.

Build ``llama.cpp`` (any build whose engine is ``llama.cpp``): the profile's program on the
server environment's PATH (no Python environment, no version pin). Without ``--metrics`` it
serves no ``/metrics``; it runs on the CPU when no GPU is free.
"""

from __future__ import annotations

from typing import ClassVar

from ocrstack.backends.base import Backend, Site
from ocrstack.core import proc


class LlamaCpp(Backend):
    """llama.cpp's ``llama-server``; its flags are not checked by a parser."""

    name: ClassVar[str] = "llama.cpp"
    python_env: ClassVar[bool] = False

    def detect(self, site: Site) -> tuple[str | None, str]:
        """The profile's build and the program's path when it is on PATH, else None."""
        exe = proc.which(site.program, site.env)
        return (site.build, exe) if exe else (None, f"{site.program} not on PATH")
