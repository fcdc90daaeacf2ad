"""The page actors of a Ray run, kept warm on a cluster between runs (issue 23 item 3).

Each ``parse --ray-address`` run used to start its actors (a new worker process each, the layout
model and recognizer loaded: 1.5-3 s per run on 2 cores) and render its pages in tasks that needed
new worker processes too (Ray's workers are per driver). Against a running cluster the actors are
now **named and detached**, in the Ray namespace :data:`NAMESPACE`, and pages are rendered on them:
the next run with the same engine settings finds them by name and starts nothing, so the start-up
is paid once by the cluster, not per run.

* **Key.** :func:`pool_key` hashes the options that choose and configure the engines (the fields
  of :class:`~ocrstack.parsing.options.LayoutOptions` and
  :class:`~ocrstack.parsing.options.OpenAIOptions`, ``recognizer``, ``ocr_runtime``; a prompt file
  by its content) and the code the actors run (the parsing package's
  :func:`~ocrstack.parsing.page_cache.code_fingerprint`, this package's actor modules). Actors are
  named ``ocrstack-KEY-pages-I`` (layout actor I) and ``ocrstack-KEY-recognition``: other engine
  settings or other code get other actors, never a stale one. Everything else (DPI, text layer,
  pages, output and cache directories) is per run (:class:`~ocrstack.scaleout.workers.Run`).
* **Dead actors.** The GCS frees a name when its actor dies, so a run that finds one missing
  creates it again; a kept actor that dies between the lookup and the run's first call (its ttl
  ran out, its node went away) is replaced there (:meth:`ActorPool.replace`), and one lost
  mid-run is replaced by the executor, which sends its pages again.
* **Release.** A kept actor ends itself after ``--ray-pool-ttl`` seconds without a call (default
  :data:`~ocrstack.scaleout.options.DEFAULT_TTL`; the actors hold their CPUs until then).
  ``--ray-pool-ttl 0`` kills the run's actors when it ends (each run starts its own, as before the
  pool). A run that had to create actors asks the pools of other keys to end once no run is open
  on them and they had no call for :data:`STALE_GRACE` s (they hold CPUs the new pool needs; a
  run in progress keeps its pool, a driver that died leaves it to the ttl). :func:`release` kills
  pools now (``python -c "import ray; ray.init(address='HOST:PORT'); from ocrstack.scaleout.pool
  import release; print(release())"``).
* **A local Ray** (``parse --ray``: started for the run, stopped after it) gets private, unnamed
  actors, killed at the end with that Ray, as before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
from typing import Any

from ocrstack.parsing import page_cache
from ocrstack.parsing.options import LayoutOptions, OpenAIOptions, ParseOptions, prompts_fingerprint
from ocrstack.scaleout.workers import PageWorker

#: The Ray namespace of every kept actor (lookups name it; a driver's own namespace is anonymous).
NAMESPACE = "ocrstack"
#: Prefix of every kept actor's name.
PREFIX = "ocrstack-"
#: Idle seconds (and no run open) after which a pool of other settings ends once a new pool is
#: made: the new pool's actors wait at most about this long for the CPUs the old ones hold.
STALE_GRACE = 10.0
#: ParseOptions fields beside the engine option classes that choose or configure an engine.
ENGINE_FIELDS = ("recognizer", "ocr_runtime")
#: Modules whose code the actors run besides the parsing package (they join the key).
ACTOR_MODULES = ("ocrstack.scaleout.workers",)


def pool_key(options: ParseOptions) -> str:
    """12 hex digits naming the pool that serves ``options``: sha256 over the engine settings
    (see the module note; the API key enters only the hash) and the actors' code."""
    names = {f.name for cls in (LayoutOptions, OpenAIOptions) for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {n: getattr(options, n) for n in sorted(names | set(ENGINE_FIELDS))}
    values["prompts"] = prompts_fingerprint(options.prompts)
    values["code"] = [page_cache.code_fingerprint(), *(_source_hash(m) for m in ACTOR_MODULES)]
    blob = json.dumps(values, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def _source_hash(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.loader is not None and spec.origin
    return hashlib.sha256(spec.loader.get_data(spec.origin)).hexdigest()[:16]  # type: ignore[attr-defined]


class ActorPool:
    """Finds or makes the page actors of one run.

    Args:
        ray: the ``ray`` module (initialised).
        options: the run's options (a new actor's engines are built from them).
        key: :func:`pool_key` for kept actors (named, detached); None for private ones.
        ttl: idle seconds before a kept actor ends itself (ignored for private ones).
        cpu: CPUs held by each layout actor.
        concurrency: threads of the recognition actor (the recognizer's page workers).
    """

    def __init__(
        self, ray: Any, options: ParseOptions, *, key: str | None, ttl: float, cpu: float, concurrency: int
    ) -> None:
        self.ray = ray
        self.options = options
        self.key = key
        self.ttl = ttl
        self.cpu = cpu
        self.concurrency = concurrency
        self._cls = ray.remote(PageWorker)
        #: Actors this run created / found alive under their name.
        self.created = 0
        self.found = 0

    def name(self, slot: int | None) -> str:
        """A kept actor's name: layout actor ``slot``, or the recognition actor for None."""
        return f"{PREFIX}{self.key}-" + ("recognition" if slot is None else f"pages-{slot}")

    def get(self, slot: int | None) -> Any:
        """The actor of ``slot`` (see :meth:`name`): the kept one of that name when it is alive,
        else a new one."""
        if self.key is not None:
            try:
                actor = self.ray.get_actor(self.name(slot), namespace=NAMESPACE)
                self.found += 1
                return actor
            except ValueError:  # no such name: never made, or its actor died
                pass
        return self.replace(slot)

    def replace(self, slot: int | None) -> Any:
        """A new actor for ``slot`` (a kept one under its name: when the old one is not dead yet,
        Ray returns it and a later loss replaces it again)."""
        self.created += 1
        if slot is None:
            resources: dict[str, Any] = {"num_cpus": 0, "max_concurrency": self.concurrency}
        else:
            resources = {"num_cpus": self.cpu}
        if self.key is None:
            return self._cls.options(**resources).remote(self.options)
        return self._cls.options(
            name=self.name(slot), namespace=NAMESPACE, lifetime="detached", get_if_exists=True, **resources
        ).remote(self.options, self.ttl)

    def expire_others(self, grace: float = STALE_GRACE) -> int:
        """Ask the kept actors of other keys to end once no run is open on them and they had no
        call for ``grace`` s (:meth:`~ocrstack.scaleout.workers.PageWorker.expire`); returns how many."""
        asked = 0
        for actor in _kept(self.ray, lambda name: not name.startswith(f"{PREFIX}{self.key}-")):
            actor.expire.remote(grace)
            asked += 1
        return asked


def _kept(ray: Any, want: Any) -> list[Any]:
    """Handles of the live kept actors whose name satisfies ``want``."""
    out = []
    for entry in ray.util.list_named_actors(all_namespaces=True):
        name = entry["name"]
        if entry["namespace"] != NAMESPACE or not name.startswith(PREFIX) or not want(name):
            continue
        try:
            out.append(ray.get_actor(name, namespace=NAMESPACE))
        except ValueError:  # ended meanwhile
            continue
    return out


def release(key: str | None = None) -> int:
    """Kill the kept actors of pool ``key`` (None: of every pool) on the cluster this process
    joined (``ray.init``); returns how many. A run using them sends their pages again."""
    import ray

    actors = _kept(ray, lambda name: key is None or name.startswith(f"{PREFIX}{key}-"))
    for actor in actors:
        ray.kill(actor)
    return len(actors)
