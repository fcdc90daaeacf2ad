"""Worker threads that end say why: ``GET /ready`` answers 503 with the reason (issue 25 item 6).

Before, a worker thread that hit a damaged job database died with a traceback on stderr while
``/ready`` kept answering 200 and jobs stayed queued forever. :func:`reporting` wraps a thread's
target so that the exception that ends it is logged and kept, by thread name, in a dict the
readiness probe reads (:attr:`ocrstack.api.worker.Worker.stopped`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("ocrstack.api")


def reporting(target: Callable[[], None], stopped: dict[str, str]) -> Callable[[], None]:
    """``target`` wrapped: an exception ending it is logged and kept in ``stopped[thread name]``
    as one line (``worker thread NAME stopped: KIND: message``); a normal return keeps nothing."""

    def run() -> None:
        try:
            target()
        except Exception as exc:
            name = threading.current_thread().name
            stopped[name] = f"worker thread {name} stopped: {type(exc).__name__}: {exc}"
            log.exception("worker thread %s stopped", name)

    return run
