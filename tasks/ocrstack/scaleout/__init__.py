"""``ocrstack parse --ray`` / ``--ray-address ADDRESS``: the parse pipeline's pages computed on a
Ray cluster (issue 13).

A stage above :mod:`ocrstack.parsing` (it drives parsing; parsing never imports it), loaded lazily
by :mod:`ocrstack.commands.parse` and the API worker only when one of them is given, so ``ray`` is
imported only then.

* :mod:`.options` -- the ``--ray``, ``--ray-address`` and ``--ray-pool-ttl`` options, declared
  once (:mod:`ocrstack.core.options`).
* :mod:`.workers` -- what runs on the cluster: the page actor (renders pages, runs the stages;
  models loaded once per actor, one :class:`~ocrstack.parsing.stages.Parser` per run over them).
* :mod:`.pool` -- the actors kept on a cluster between runs: named by a key of the engine
  settings, detached, released after ``--ray-pool-ttl`` idle seconds.
* :mod:`.session` -- joining or starting Ray, and the process environment a local Ray leaves
  restored after it (else a later ``--ray-address`` driver in the process loses its actors).
* :mod:`.executor` -- :class:`RayExecutor`, the :class:`~ocrstack.parsing.run.work.PageExecutor` that
  :func:`ocrstack.parsing.run.pipeline.run` hands the missing pages to.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RayExecutor"]


def __getattr__(name: str) -> Any:
    if name == "RayExecutor":
        from ocrstack.scaleout.executor import RayExecutor

        return RayExecutor
    raise AttributeError(name)
