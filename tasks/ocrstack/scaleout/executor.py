""":class:`RayExecutor`: the missing pages of a ``parse`` run computed on Ray (issue 13 item 1).

The shape is Ray Data's LLM batch pattern and docling-serve's Ray engine, on Ray Core:

* **render + layout** -- a pool of :class:`~ocrstack.scaleout.workers.PageWorker` actors (the layout
  model loaded once per actor) render each page and find its blocks; a page goes to the actor
  with the fewest pages in flight;
* **recognition** -- with a server-backed recognizer (``--recognizer openai``) one threaded
  recognition actor holds the client and dispatcher over every ``--server-url``
  (``max_concurrency`` = ``concurrency x servers``, the local pipeline's page workers); an
  in-process CPU recognizer runs on the layout actor itself;
* **assembly** -- per document on the driver by :func:`ocrstack.parsing.run.pipeline.run`, which also
  writes each finished page to the page cache (``--cache-dir``), so an interrupted driver resumes
  at page granularity.

Against a running cluster (``--ray-address``, the API service) the actors are kept between runs
(:mod:`ocrstack.scaleout.pool`: named by a key of the engine settings, detached, released after
``--ray-pool-ttl`` idle seconds): a second run starts no actor and loads no model. A local Ray
started for the run (``--ray``) gets private actors, killed with it at the end.

Lost workers (issue 23 item 3): Ray's own actor restart waits until the actor can be placed
again, which after a node is removed may be never (the surviving CPUs are held by the other
actors), so a page sent to such an actor waited forever. Instead actors are created without
restarts; a page whose actor (or whose intermediate object) was lost is sent again, to a live actor
(:data:`LOST_PAGE_RETRIES` times at most), and the pool is resized to the CPUs the cluster has now
(:meth:`RayExecutor._replace_lost`). A page reaches ``page_done`` once, so the page cache and the
output get each page once. Memory stays bounded: pages are submitted lazily, at most
:meth:`RayExecutor.in_flight` at once.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from typing import Any

from ocrstack.core.errors import ConfigError
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.run.work import DocumentWork
from ocrstack.parsing.stages import Parser
from ocrstack.scaleout.options import DEFAULT_TTL, LOCAL
from ocrstack.scaleout.pool import ActorPool, pool_key
from ocrstack.scaleout.session import connect, ray_environment, restore_ray_environment
from ocrstack.scaleout.workers import Run

#: Replacement actors per actor of the run's pool (a page should survive a worker or two going away).
MAX_RESTARTS = 3
#: Times one page is sent again after its actor, node or intermediate object was lost (each lost
#: actor can cost a page one try before it is replaced; a node holds a few actors).
LOST_PAGE_RETRIES = 5
#: Tries to begin a run on an actor slot whose kept actor died after it was looked up.
BEGIN_TRIES = 3
#: Seconds the end of a run waits for the kept actors to drop the run's Parser.
END_TIMEOUT = 10.0


class RayExecutor:
    """A :class:`~ocrstack.parsing.run.work.PageExecutor` on a Ray cluster.

    Args:
        address: ``local`` (start a Ray on 127.0.0.1 for this run and stop it after), ``auto``,
            ``HOST:PORT`` or ``ray://HOST:PORT``; ignored when Ray is already initialised in this
            process (tests, the API service), which is then used and left running.
        layout_actors: size of the layout actor pool (default: :func:`default_layout_actors`
            of the cluster's CPUs).
        num_cpus: CPUs of a local Ray (default: all of this machine's).
        keep_ray: leave a Ray this executor started running after the run (the API service: one
            Ray for all jobs, stopped when the process exits); False stops it (``ocrstack parse``).
        pool_ttl: idle seconds after which the kept actors end (``--ray-pool-ttl``; 0: killed at
            the end of the run). Actors are kept (:mod:`ocrstack.scaleout.pool`) unless this is
            a ``local`` Ray for one run (``keep_ray`` False): those are private and killed.
    """

    def __init__(
        self,
        address: str = LOCAL,
        *,
        layout_actors: int | None = None,
        num_cpus: int | None = None,
        keep_ray: bool = False,
        pool_ttl: float = DEFAULT_TTL,
    ):
        if importlib.util.find_spec("ray") is None:  # fail before any page, not at the first task
            raise ConfigError(
                "--ray needs the ray package, which this environment lacks",
                "install it with the project's extra: pip install 'ocrstack[ray]' (the sdk and dev "
                "locks and the pixi sdk environment include it)",
            )
        self.address = address
        self.layout_actors = layout_actors
        self.num_cpus = num_cpus
        self.keep_ray = keep_ray
        self.pool_ttl = pool_ttl
        #: True when the actors are kept between runs (named, detached).
        self.kept = address != LOCAL or keep_ray
        #: Seconds the last run spent starting its actors (found or made, engines probed).
        self.start_seconds = 0.0
        self._cpu = 1.0  # CPUs requested per layout actor
        #: Actor handles of the last run (tests kill them to prove pages are not lost).
        self.actors: list[Any] = []
        self.recognition_actor: Any = None
        #: The last run's pool (``created`` / ``found`` actors) and what each actor's ``begin``
        #: said (``pid``, ``runs`` begun there before), layout actors first.
        self.pool: ActorPool | None = None
        self.begun: list[dict[str, int]] = []
        #: Pages computed (not from the cache) in the last run.
        self.computed = 0
        #: Pages of the last run sent again because their actor, node or object was lost.
        self.lost = 0
        self._replacements = 0
        self._slots: dict[str, int] = {}  # layout actor id -> its slot (its name's number)
        self._inflight: dict[Any, tuple[DocumentWork, int, Any]] = {}

    def in_flight(self, parser: Parser, layout_actors: int) -> int:
        """Pages submitted at once: twice the pages the actors can work on (layout actors plus
        the recognition actor's ``parser.workers`` for a server-backed recognizer), like the
        local pipeline's ``2 x workers``."""
        busy = layout_actors + (parser.workers if parser.recognizer.remote else 0)
        return 2 * busy

    # -- the run

    def run(
        self,
        parser: Parser,
        work: list[DocumentWork],
        page_done: Callable[[DocumentWork, int, PageResult | BaseException], None],
    ) -> None:
        """Compute every missing page of ``work`` on Ray; see
        :class:`~ocrstack.parsing.run.work.PageExecutor`.

        Raises:
            ServerUnreachable / ServerRejected / ConfigError: the cluster or an engine fails its
                start (before any page), or a page fails fatally (re-raised by ``page_done``).
        """
        import ray

        saved = ray_environment()
        started = connect(self.address, self.num_cpus)
        self.computed = self.lost = 0
        self.actors, self.recognition_actor, self.pool, self.begun = [], None, None, []
        # the inputs stay here (a shell glob can name thousands): the actors get the pages' files
        run = Run(id=uuid.uuid4().hex, options=dataclasses.replace(parser.options, inputs=()))
        try:
            self._run(ray, parser, run, work, page_done)
        finally:
            self._finish(ray, run)
            if started and not self.keep_ray:
                ray.shutdown()
                restore_ray_environment(saved)  # see ocrstack.scaleout.session

    def _finish(self, ray: Any, run: Run) -> None:
        """Private actors, or ``pool_ttl`` 0: kill them. Kept ones: cancel the run's pages still
        queued (a run stopped by an error) and have each drop the run's Parser."""
        actors = [a for a in [*self.actors, self.recognition_actor] if a is not None]
        for ref in self._inflight:
            try:
                ray.cancel(ref)
            except Exception:  # already done or its actor gone: nothing to cancel
                pass
        self._inflight = {}
        if not self.kept or self.pool_ttl == 0:
            for actor in actors:
                ray.kill(actor)
            return
        ends = [a.end.remote(run.id) for a in actors]
        if ends:
            ray.wait(ends, num_returns=len(ends), timeout=END_TIMEOUT)  # a dead actor: nothing to drop

    def _start_actors(self, ray: Any, parser: Parser, run: Run) -> None:
        """Find or make the run's actors and begin the run on each (engines probed: a bad server
        fails the run before any page); a kept actor found dead is made again (:data:`BEGIN_TRIES`)."""
        remote = parser.recognizer.remote
        cpus = int(ray.cluster_resources().get("CPU", 1))
        # a one-CPU cluster: half a CPU for the layout actor, so other work still fits
        self._cpu = 1.0 if cpus >= 2 else 0.5
        n = self.layout_actors or default_layout_actors(cpus)
        t = time.perf_counter()
        key = pool_key(parser.options) if self.kept else None
        ttl = self.pool_ttl or DEFAULT_TTL  # ttl 0 kills them at the end; this covers a driver that dies
        pool = ActorPool(ray, parser.options, key=key, ttl=ttl, cpu=self._cpu, concurrency=parser.workers)
        self.pool = pool
        slots: list[int | None] = [*range(n), *([None] if remote else [])]
        handles = {slot: pool.get(slot) for slot in slots}
        said: dict[int | None, dict[str, int]] = {}
        pending = list(slots)
        for attempt in range(BEGIN_TRIES):
            self.actors, self.recognition_actor = [handles[i] for i in range(n)], handles.get(None)
            calls = {
                slot: handles[slot].begin.remote(run, slot is None or not remote, ttl) for slot in pending
            }
            pending = []
            for slot, ref in calls.items():
                try:
                    said[slot] = _get(ray, ref)  # an engine that cannot start fails the run now
                except Exception as exc:
                    if not _is_lost(ray, exc) or attempt == BEGIN_TRIES - 1:
                        raise
                    pending.append(slot)
            if not pending:
                break
            time.sleep(0.2 * (attempt + 1))  # the GCS frees a dead actor's name as it learns of the death
            for slot in pending:
                handles[slot] = pool.replace(slot)
        self.actors, self.recognition_actor = [handles[i] for i in range(n)], handles.get(None)
        self._slots = {a._actor_id.hex(): i for i, a in enumerate(self.actors)}
        self.begun = [said[slot] for slot in slots]
        self._replacements = MAX_RESTARTS * (n + 1)
        if key is not None and pool.created:
            pool.expire_others()  # other settings' pools give their CPUs back once idle
        self.start_seconds = time.perf_counter() - t

    def _new_layout_actor(self) -> Any:
        """A layout actor in the lowest free slot (a kept one under that slot's name)."""
        assert self.pool is not None
        used = set(self._slots.values())
        slot = next(i for i in range(len(used) + 1) if i not in used)
        actor = self.pool.replace(slot)
        self._slots[actor._actor_id.hex()] = slot
        return actor

    def _drop(self, actor: Any) -> None:
        self.actors = [a for a in self.actors if a is not actor]
        self._slots.pop(actor._actor_id.hex(), None)

    def _replace_lost(self, ray: Any, exc: BaseException) -> None:
        """After a lost page: drop the actor ``exc`` names, replace a lost recognition actor, and
        resize the layout pool to the cluster's CPUs now (a removed node's actors are not waited
        for; surplus actors on the surviving nodes are released so the new ones can be placed)."""
        assert self.pool is not None
        lost = getattr(exc, "actor_id", None)
        if lost is not None and self._replacements > 0:
            if self.recognition_actor is not None and self.recognition_actor._actor_id.hex() == lost:
                self._replacements -= 1
                self.recognition_actor = self.pool.replace(None)
            for actor in [a for a in self.actors if a._actor_id.hex() == lost]:
                self._drop(actor)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        target = min(self.layout_actors or cpus, default_layout_actors(cpus))
        while len(self.actors) > max(target, 1):
            surplus = self.actors[-1]
            self._drop(surplus)
            ray.kill(surplus)  # its pages fail as lost and are sent again
        while len(self.actors) < target and self._replacements > 0:
            self._replacements -= 1
            self.actors.append(self._new_layout_actor())
        if not self.actors:  # nothing left to place a page on: the pages fail, not wait
            self.actors.append(self._new_layout_actor())
        self.lost += 1

    def _submit(self, run: Run, w: DocumentWork, i: int, load: Counter) -> tuple[Any, Any]:
        actor = min(self.actors, key=lambda a: load[a._actor_id])
        args = (run, str(w.source), i, w.paths)
        if self.recognition_actor is not None:
            return self.recognition_actor.recognize.remote(run, actor.layout.remote(*args)), actor
        return actor.page.remote(*args), actor

    def _run(
        self,
        ray: Any,
        parser: Parser,
        run: Run,
        work: list[DocumentWork],
        page_done: Callable[[DocumentWork, int, PageResult | BaseException], None],
    ) -> None:
        if not any(w.missing for w in work):
            return
        self._start_actors(ray, parser, run)
        limit = self.in_flight(parser, len(self.actors))
        load: Counter = Counter()  # pages in flight per layout actor id
        inflight = self._inflight = {}
        tries: Counter = Counter()
        again: deque[tuple[DocumentWork, int]] = deque()  # lost pages, sent before new ones
        pages: Iterator[tuple[DocumentWork, int]] = ((w, i) for w in work for i in w.missing)
        exhausted = False
        while inflight or again or not exhausted:
            while (again or not exhausted) and len(inflight) < limit:
                nxt = again.popleft() if again else next(pages, None)
                if nxt is None:
                    exhausted = True
                    break
                ref, actor = self._submit(run, *nxt, load)
                load[actor._actor_id] += 1
                inflight[ref] = (*nxt, actor)
            if not inflight:
                break
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                w, i, actor = inflight.pop(ref)
                load[actor._actor_id] -= 1
                try:
                    outcome: PageResult | BaseException = _get(ray, ref)
                    self.computed += 1
                except Exception as exc:  # page_done decides: fatal or one failed page
                    if _is_lost(ray, exc) and tries[(id(w), i)] < LOST_PAGE_RETRIES:
                        tries[(id(w), i)] += 1
                        self._replace_lost(ray, exc)
                        again.append((w, i))
                        continue
                    outcome = exc
                page_done(w, i, outcome)


def default_layout_actors(cpus: int) -> int:
    """Layout actors for a cluster of ``cpus`` CPUs: each holds one CPU; a quarter of the CPUs (at
    least one) stays free for what holds none (the recognition actor's threads encoding crops,
    the driver on its node, other jobs)."""
    return max(1, cpus - max(1, cpus // 4))


def _is_lost(ray: Any, exc: BaseException) -> bool:
    """True when ``exc`` says the page's worker, node or intermediate object went away (the page
    is sent again), not that the page itself failed."""
    e = ray.exceptions
    kinds = (e.RayActorError, e.ObjectLostError, e.WorkerCrashedError, e.NodeDiedError)
    kinds += (e.LocalRayletDiedError,)
    return isinstance(exc, kinds) or isinstance(getattr(exc, "cause", None), kinds)


def _get(ray: Any, ref: Any) -> Any:
    """``ray.get`` with a task's own exception re-raised as itself (not wrapped in RayTaskError),
    so the pipeline's fatal/page-failure split and error messages are those of a local run."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise
