"""Ctrl-C during ``ocrstack parse`` (issue 10): stop within a second or two, keep finished pages,
never crash on a second Ctrl-C.

Why this is needed: a page in flight runs in a worker thread (rapidocr/onnxruntime for seconds
on a heavy page). Python's default SIGINT handling raises :class:`KeyboardInterrupt` in the main
thread only, and :mod:`concurrent.futures` then joins every worker at interpreter exit, so the
process lived until the page was done (up to 25 s); a second Ctrl-C during that join started
interpreter shutdown while onnxruntime's own threads still ran -- ``terminate called without an
active exception``, rc 134.

What happens instead:

* :func:`sigint_guard` (main thread only, in :func:`ocrstack.parsing.run.pipeline.run`): the first
  SIGINT sets :data:`STOP` and raises :class:`KeyboardInterrupt` as usual; pages not started
  are cancelled (workers check :data:`STOP` before each page), pages in flight are abandoned.
  Finished pages are already in the page cache (written as each page finishes, atomically).
* :func:`exit_interrupted` (the CLI): when a worker is still busy, flush stdout/stderr and
  leave with :func:`os._exit` (130), skipping the join and the native destructors; a second
  SIGINT after the first does the same at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

#: Set by the first SIGINT of a run; page workers check it before starting a page.
STOP = threading.Event()
#: Name prefix of the page worker threads (the pipeline's thread pool).
WORKER_PREFIX = "ocrstack-page"
#: Exit status of an interrupted run (128 + SIGINT, the shell convention).
EXIT_INTERRUPTED = 130


class Stopped(Exception):
    """A page was not started because the run is stopping (never reaches the user)."""


def check() -> None:
    """Raise :class:`Stopped` when the run is stopping (call between units of work)."""
    if STOP.is_set():
        raise Stopped("run interrupted")


def busy_workers() -> list[threading.Thread]:
    """Page worker threads still alive (a page in flight)."""
    return [t for t in threading.enumerate() if t.name.startswith(WORKER_PREFIX) and t.is_alive()]


def hard_exit(code: int = EXIT_INTERRUPTED) -> None:
    """Flush the standard streams and end the process now (no thread joins, no finalizers)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _handler(signum: int, frame: object) -> None:  # signal handler signature
    if STOP.is_set():  # second Ctrl-C: finished pages are on disk already
        with contextlib.suppress(Exception):
            sys.stderr.write("\nocrstack: interrupted again, exiting now\n")
        hard_exit()
    STOP.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigint_guard() -> Iterator[None]:
    """Install the two-stage SIGINT handler for a run (no-op outside the main thread or when the
    process already has a handler of its own, e.g. a server).

    :data:`STOP` is cleared on entry. On exit the previous handler comes back -- unless the run
    was interrupted and a worker is still busy: then the handler stays, so a second Ctrl-C before
    :func:`exit_interrupted` ends the process at once instead of crashing it.
    """
    STOP.clear()
    own = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    if own:
        signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        if own and not (STOP.is_set() and busy_workers()):
            signal.signal(signal.SIGINT, signal.default_int_handler)


def exit_interrupted(message: str) -> None:
    """After a :class:`KeyboardInterrupt` reached the CLI: print ``message`` and, if a page worker
    is still busy, end the process now with 130 (see the module docstring); else return (the
    caller returns 130 normally)."""
    print(message, file=sys.stderr)
    if busy_workers():
        print("ocrstack: interrupted", file=sys.stderr)
        hard_exit()
