"""The interface every serving back-end implements, and the facts it is made of.

A back-end is the program a serve profile starts (its build's ``engine`` in
``serve_profiles.yaml``). Callers never compare engine names; they ask the back-end
(:func:`ocrstack.backends.registry.get`) for what differs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ocrstack import versions
from ocrstack.core import paths


@dataclass(frozen=True)
class Gauges:
    """The Prometheus gauges a back-end reports its queue with on ``GET /metrics``.

    Attributes:
        running: requests generating now (every client), summed over engine labels.
        waiting: requests queued (every client).
        cache: KV-cache / token use in 0..1; the first name found wins (older releases' names last).
        labels: label names the engine puts on these samples (the test fake renders them).
    """

    running: str
    waiting: str
    cache: tuple[str, ...]
    labels: tuple[str, ...] = ("model_name",)


@dataclass(frozen=True)
class Site:
    """The server environment a profile would start in, as build detection sees it.

    Attributes:
        build: the build id the profile targets (``serve_profiles.yaml`` ``builds.<id>``).
        program: the profile's program (``argv[0]``, e.g. ``llama-server``).
        site_packages: the venv's ``site-packages``; None = this interpreter's (or no venv).
        where: words for messages (``in /venv/lib/python3.12/site-packages``).
        env: the environment the server would start with (``PATH`` for programs).
    """

    build: str
    program: str
    site_packages: Path | None
    where: str
    env: Mapping[str, str]

    def version(self, dist: str) -> str | None:
        """Installed version of distribution ``dist`` (normalized name) here, or None.

        Read from the distributions' metadata on disk; nothing is imported.
        """
        if self.site_packages is None:
            return versions.installed(dist)
        import importlib.metadata as md  # read when asked, not at start-up

        for d in md.distributions(path=[str(self.site_packages)]):
            if (d.metadata["Name"] or "").lower().replace("_", "-") == dist:
                return d.version
        return None


class Backend(ABC):
    """One serving back-end.

    Class attributes (data; a subclass sets what differs from the defaults):
        name: the ``engine`` value of ``serve_profiles.yaml`` builds that selects it.
        gpu_required: it cannot run on the CPU (``serve`` then refuses to start without a GPU
            instead of noting "runs on the CPU here").
        python_env: it runs from a Python environment, so a given ``--venv`` must exist.
        gauges: its ``/metrics`` queue gauges for load-aware routing; None = no ``/metrics``.
        parser_check: how ``serve check-profiles`` checks its flags: ``"probe"`` (the engine's own
            argparse parser in a throwaway venv, ``serving/engine_probe.py``), ``"help"`` (its
            ``--help`` text), or None (not checked).
        rules_file: doctor rules that concern only this back-end (``schema: 1`` + ``rules``, the
            ``doctor_rules.yaml`` format), relative to ``ocrstack/data/`` (an absolute path is
            used as is), or None.
    """

    name: ClassVar[str]
    gpu_required: ClassVar[bool] = False
    python_env: ClassVar[bool] = True
    gauges: ClassVar[Gauges | None] = None
    parser_check: ClassVar[str | None] = None
    rules_file: ClassVar[str | None] = None

    @abstractmethod
    def detect(self, site: Site) -> tuple[str | None, str]:
        """Recognise the build installed at ``site`` (the version expectations of this back-end).

        Returns:
            ``(build id, detail)`` when the installed release is one a build of this back-end
            names, else ``(None, why)``; ``detail`` names the version found and where.
        """

    def rules_path(self) -> Path | None:
        """The file of :attr:`rules_file`, or None when this back-end has no rules of its own."""
        return paths.data_file(self.rules_file) if self.rules_file else None

    def doctor_rule_data(self) -> Any:
        """The parsed YAML of :meth:`rules_path` (None when it has none).

        Raises:
            ConfigError: the file is missing or not YAML (message names it).
        """
        path = self.rules_path()
        return None if path is None else paths.read_yaml(path, f"{self.name} doctor rules")
