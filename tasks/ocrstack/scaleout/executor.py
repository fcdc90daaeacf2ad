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

Lost workers are Ray's job: actors are created with ``max_restarts`` and ``max_task_retries``
(a killed actor restarts and its in-flight pages are retried), tasks with ``max_retries``. Memory
stays bounded: pages are submitted lazily, at most :meth:`RayExecutor.in_flight` at once.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ocrstack.core.errors import ConfigError, ServerUnreachable
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.run.work import DocumentWork
from ocrstack.parsing.stages import Parser
from ocrstack.scaleout.options import LOCAL
from ocrstack.scaleout.workers import PageWorker, render

#: Restarts of a lost actor, retries of its in-flight tasks, retries of a lost render task
#: (Ray's defaults are 0, 0 and 3; a page should survive a worker or two going away).
MAX_RESTARTS = 3
MAX_TASK_RETRIES = 3
MAX_RETRIES = 3
_INIT_LOCK = threading.Lock()


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

    # -- Ray connection

    def _connect(self) -> bool:
        """Initialise Ray unless it is; return True when this call started it.

        Raises:
            ServerUnreachable: no Ray cluster at the address.
        """
        import ray

        with _INIT_LOCK:  # API worker threads: one ray.init per process
            if ray.is_initialized():
                return False
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address == LOCAL:
                kwargs.update(address="local", _node_ip_address="127.0.0.1", num_cpus=self.num_cpus)
            else:
                _check_reachable(self.address)
                kwargs["address"] = self.address
            try:
                ray.init(**kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ServerUnreachable(
                    f"no Ray cluster at --ray-address {self.address}: {exc}",
                    "start one (ray start --head) or check RAY_ADDRESS; --ray starts a local Ray",
                ) from None
            return True

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

        started = self._connect()
        self.computed = 0
        try:
            self._run(ray, parser, work, page_done)
        finally:
            for actor in [*self.actors, self.recognition_actor]:
                if actor is not None:
                    ray.kill(actor)
            if started and not self.keep_ray:
                ray.shutdown()

    def _start_actors(self, ray: Any, parser: Parser) -> None:
        options = parser.options
        remote = parser.recognizer.remote
        cpus = int(ray.cluster_resources().get("CPU", 1))
        # a one-CPU cluster: half a CPU for the layout actor, half for the render tasks
        self._cpu = 1.0 if cpus >= 2 else 0.5
        n = self.layout_actors or default_layout_actors(cpus)
        actor_cls = ray.remote(PageWorker)
        restart = {"max_restarts": MAX_RESTARTS, "max_task_retries": MAX_TASK_RETRIES}
        self.actors = [actor_cls.options(num_cpus=self._cpu, **restart).remote(options) for _ in range(n)]
        self.recognition_actor = None
        starts = [a.start.remote(not remote) for a in self.actors]
        if remote:
            self.recognition_actor = actor_cls.options(
                num_cpus=0, max_concurrency=parser.workers, **restart
            ).remote(options)
            starts.append(self.recognition_actor.start.remote(True))
        t = time.perf_counter()
        for ref in starts:
            _get(ray, ref)  # an engine that cannot start fails the run now, not page by page
        self.start_seconds = time.perf_counter() - t

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
        o = parser.options
        render_task = ray.remote(render).options(num_cpus=self._cpu, max_retries=MAX_RETRIES)
        limit = self.in_flight(parser, len(self.actors))
        load = dict.fromkeys(range(len(self.actors)), 0)
        inflight: dict[Any, tuple[DocumentWork, int, int]] = {}
        pages: Iterator[tuple[DocumentWork, int]] = ((w, i) for w in work for i in w.missing)
        exhausted = False
        while inflight or not exhausted:
            while not exhausted and len(inflight) < limit:
                nxt = next(pages, None)
                if nxt is None:
                    exhausted = True
                    break
                w, i = nxt
                rendered = render_task.remote(str(w.source), i, o.dpi, o.password, o.max_pixels)
                a = min(load, key=load.__getitem__)
                load[a] += 1
                actor = self.actors[a]
                if self.recognition_actor is not None:
                    ref = self.recognition_actor.recognize.remote(actor.layout.remote(rendered, w.paths))
                else:
                    ref = actor.page.remote(rendered, w.paths)
                inflight[ref] = (w, i, a)
            if not inflight:
                break
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                w, i, a = inflight.pop(ref)
                load[a] -= 1
                try:
                    outcome: PageResult | BaseException = _get(ray, ref)
                    self.computed += 1
                except Exception as exc:  # page_done decides: fatal or one failed page
                    outcome = exc
                page_done(w, i, outcome)


def default_layout_actors(cpus: int) -> int:
    """Layout actors for a cluster of ``cpus`` CPUs: each holds one CPU; a quarter of the CPUs (at
    least one) stays free for the render tasks, so rendering never waits for a layout actor."""
    return max(1, cpus - max(1, cpus // 4))


#: Seconds to wait for a TCP connection to a cluster address before giving up (Ray itself retries
#: for minutes against an address where nothing listens).
CONNECT_TIMEOUT = 5.0


def _check_reachable(address: str) -> None:
    """Fail in seconds when nothing listens at ``HOST:PORT`` / ``ray://HOST:PORT`` (``auto`` is
    left to Ray, which fails at once without a local cluster).

    Raises:
        ServerUnreachable: the TCP connection is refused or times out (address and fix named).
    """
    import socket

    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT):
            return
    except (OSError, ValueError) as exc:
        raise ServerUnreachable(
            f"no Ray cluster at --ray-address {address}: {exc}",
            "start one (ray start --head --port PORT) and pass its address, or use --ray for a local Ray",
        ) from None


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
