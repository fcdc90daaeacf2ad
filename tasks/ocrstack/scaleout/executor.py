""":class:`RayExecutor`: the missing pages of a ``parse`` run computed on Ray (issue 13 item 1).

The shape is Ray Data's LLM batch pattern and docling-serve's Ray engine, on Ray Core:

* **render** -- one CPU task per page (``max_retries``: a lost worker re-renders the page);
* **layout** -- a pool of :class:`~ocrstack.scaleout.workers.PageWorker` actors (the layout model
  loaded once per actor); a page goes to the actor with the fewest pages in flight;
* **recognition** -- with a server-backed recognizer (``--recognizer openai``) one threaded
  recognition actor holds the client and dispatcher over every ``--server-url``
  (``max_concurrency`` = ``concurrency x servers``, the local pipeline's page workers); an
  in-process CPU recognizer runs on the layout actor itself;
* **assembly** -- per document on the driver by :func:`ocrstack.parsing.run.pipeline.run`, which also
  writes each finished page to the page cache (``--cache-dir``), so an interrupted driver resumes
  at page granularity.

Lost workers: render tasks are retried by Ray (``max_retries``); lost actors are the executor's job
(issue 23 item 3). Ray's own actor restart waits until the actor can be placed again, which after
a node is removed may be never (the surviving CPUs are held by the other actors and the render
tasks), so a page sent to such an actor waited forever. Instead actors are created without
restarts; a page whose actor (or whose intermediate object) was lost is sent again, to a live actor
(:data:`LOST_PAGE_RETRIES` times at most), and the pool is resized to the CPUs the cluster has now
(:meth:`RayExecutor._replace_lost`). A page reaches ``page_done`` once, so the page cache and the
output get each page once. Memory stays bounded: pages are submitted lazily, at most
:meth:`RayExecutor.in_flight` at once.
"""

from __future__ import annotations

import importlib.util
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from typing import Any

from ocrstack.core.errors import ConfigError
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.run.work import DocumentWork
from ocrstack.parsing.stages import Parser
from ocrstack.scaleout.options import LOCAL
from ocrstack.scaleout.session import connect, ray_environment, restore_ray_environment
from ocrstack.scaleout.workers import PageWorker, render

#: Replacement actors per actor of the run's pool, and retries of a lost render task (Ray's
#: default is 3; a page should survive a worker or two going away).
MAX_RESTARTS = 3
MAX_RETRIES = 3
#: Times one page is sent again after its actor, node or intermediate object was lost (each lost
#: actor can cost a page one try before it is replaced; a node holds a few actors).
LOST_PAGE_RETRIES = 5


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
    """

    def __init__(
        self,
        address: str = LOCAL,
        *,
        layout_actors: int | None = None,
        num_cpus: int | None = None,
        keep_ray: bool = False,
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
        #: Seconds the last run spent starting its actors (engines built, servers probed).
        self.start_seconds = 0.0
        self._cpu = 1.0  # CPUs requested per layout actor and per render task
        #: Actor handles of the last run (tests kill them to prove pages are not lost).
        self.actors: list[Any] = []
        self.recognition_actor: Any = None
        #: Pages computed (not from the cache) in the last run.
        self.computed = 0
        #: Pages of the last run sent again because their actor, node or object was lost.
        self.lost = 0
        self._replacements = 0

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
        try:
            self._run(ray, parser, work, page_done)
        finally:
            for actor in [*self.actors, self.recognition_actor]:
                if actor is not None:
                    ray.kill(actor)
            if started and not self.keep_ray:
                ray.shutdown()
                restore_ray_environment(saved)  # see ocrstack.scaleout.session

    def _new_actor(self, ray: Any, parser: Parser, recognition: bool) -> Any:
        """A page actor (no Ray restarts: a lost one is replaced by :meth:`_replace_lost`)."""
        actor_cls = ray.remote(PageWorker)
        if recognition:
            return actor_cls.options(num_cpus=0, max_concurrency=parser.workers).remote(parser.options)
        return actor_cls.options(num_cpus=self._cpu).remote(parser.options)

    def _start_actors(self, ray: Any, parser: Parser) -> None:
        remote = parser.recognizer.remote
        cpus = int(ray.cluster_resources().get("CPU", 1))
        # a one-CPU cluster: half a CPU for the layout actor, half for the render tasks
        self._cpu = 1.0 if cpus >= 2 else 0.5
        n = self.layout_actors or default_layout_actors(cpus)
        self.actors = [self._new_actor(ray, parser, False) for _ in range(n)]
        self._replacements = MAX_RESTARTS * (n + 1)
        self.recognition_actor = None
        starts = [a.start.remote(not remote) for a in self.actors]
        if remote:
            self.recognition_actor = self._new_actor(ray, parser, True)
            starts.append(self.recognition_actor.start.remote(True))
        t = time.perf_counter()
        for ref in starts:
            _get(ray, ref)  # an engine that cannot start fails the run now, not page by page
        self.start_seconds = time.perf_counter() - t

    def _replace_lost(self, ray: Any, parser: Parser, exc: BaseException) -> None:
        """After a lost page: drop the actor ``exc`` names, replace a lost recognition actor, and
        resize the layout pool to the cluster's CPUs now (a removed node's actors are not waited
        for; surplus actors on the surviving nodes are released so render tasks can run)."""
        lost = getattr(exc, "actor_id", None)
        if lost is not None and self._replacements > 0:
            if self.recognition_actor is not None and self.recognition_actor._actor_id.hex() == lost:
                self._replacements -= 1
                self.recognition_actor = self._new_actor(ray, parser, True)
            self.actors = [a for a in self.actors if a._actor_id.hex() != lost]
        cpus = int(ray.cluster_resources().get("CPU", 0))
        target = min(self.layout_actors or cpus, default_layout_actors(cpus))
        while len(self.actors) > max(target, 1):
            ray.kill(self.actors.pop())  # its pages fail as lost and are sent again
        while len(self.actors) < target and self._replacements > 0:
            self._replacements -= 1
            self.actors.append(self._new_actor(ray, parser, False))
        if not self.actors:  # nothing left to place a page on: the pages fail, not wait
            self.actors.append(self._new_actor(ray, parser, False))
        self.lost += 1

    def _submit(self, ray: Any, parser: Parser, w: DocumentWork, i: int, load: Counter) -> tuple[Any, Any]:
        o = parser.options
        render_task = ray.remote(render).options(num_cpus=self._cpu, max_retries=MAX_RETRIES)
        rendered = render_task.remote(str(w.source), i, o.dpi, o.password, o.max_pixels)
        actor = min(self.actors, key=lambda a: load[a._actor_id])
        if self.recognition_actor is not None:
            return self.recognition_actor.recognize.remote(actor.layout.remote(rendered, w.paths)), actor
        return actor.page.remote(rendered, w.paths), actor

    def _run(
        self,
        ray: Any,
        parser: Parser,
        work: list[DocumentWork],
        page_done: Callable[[DocumentWork, int, PageResult | BaseException], None],
    ) -> None:
        if not any(w.missing for w in work):
            return
        self._start_actors(ray, parser)
        limit = self.in_flight(parser, len(self.actors))
        load: Counter = Counter()  # pages in flight per layout actor id
        inflight: dict[Any, tuple[DocumentWork, int, Any]] = {}
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
                ref, actor = self._submit(ray, parser, *nxt, load)
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
                        self._replace_lost(ray, parser, exc)
                        again.append((w, i))
                        continue
                    outcome = exc
                page_done(w, i, outcome)


def default_layout_actors(cpus: int) -> int:
    """Layout actors for a cluster of ``cpus`` CPUs: each holds one CPU; a quarter of the CPUs (at
    least one) stays free for the render tasks, so rendering never waits for a layout actor."""
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
