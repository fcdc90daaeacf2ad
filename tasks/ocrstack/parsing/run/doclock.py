"""An advisory lock per output document (issue 10): two ``ocrstack parse`` runs into the same
``-o`` never work on the same document at once.

The lock is a :class:`filelock.FileLock` (``flock`` on POSIX; released by the kernel when the
holding process dies, so a SIGKILLed run leaves no stale lock) on
``OUT/.ocrstack-cache/locks/NAME.lock``. Next to it the holder writes ``NAME.holder.json``
(pid, host, start time) so a waiting run can say which run holds the document. A second run
waits up to ``--lock-timeout`` seconds (saying so once, with the holder's pid), then gives up on
that document with :class:`~ocrstack.core.errors.OutputLocked`; after the wait it finds the
document up to date and skips it.

The holder record lives only as long as the lock: it is removed when the block ends, however it
ends (document written, failed, stopped), while the lock is still held, so no finished run's
record is ever read. Only a killed run leaves one behind; :func:`holder` sees that its pid is
gone (same host) and treats it as unknown, and the next run on that document replaces it. The
empty ``NAME.lock`` itself stays: removing a file others may be waiting to ``flock`` would let
two runs hold "the" lock at once (one on the removed file), and it blocks nobody.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from ocrstack.core.errors import OutputLocked
from ocrstack.parsing import outputs


def lock_dir(out_dir: Path) -> Path:
    """Where the locks of ``out_dir`` live (inside the page cache directory, never an input)."""
    return out_dir / outputs.CACHE_DIR / "locks"


def holder_path(paths: outputs.OutputPaths) -> Path:
    """The holder record file of ``paths``' lock (exists only while a run holds it, or a killed run's)."""
    return lock_dir(paths.out_dir) / f"{paths.name}.holder.json"


def holder(paths: outputs.OutputPaths) -> dict:
    """The holder record of ``paths``' lock (``{"pid", "host", "since"}``).

    {} when unknown: no record, an unreadable one, or a stale one (:func:`is_stale`: left by a
    killed run whose pid is gone), so a waiting run never names a dead process as the holder.
    """
    try:
        data = json.loads(holder_path(paths).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and not is_stale(data) else {}


def is_stale(info: dict) -> bool:
    """True when the record names a process of this host that no longer exists (a killed run).

    A record from another host (a shared filesystem) cannot be checked here and is not stale; a
    pid that exists but belongs to another user (``EPERM``) is alive.
    """
    pid = info.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return True  # not a record this module writes
    if info.get("host") != socket.gethostname() or pid == os.getpid() or os.name != "posix":
        return False  # os.kill(pid, 0) is only a liveness probe on POSIX
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # EPERM: alive, another user's
    return False


def _who(info: dict) -> str:
    if not info.get("pid"):
        return "another ocrstack run"
    where = f" on {info['host']}" if info.get("host") and info["host"] != socket.gethostname() else ""
    return f"another ocrstack run (pid {info['pid']}{where}, since {info.get('since', '?')})"


@contextlib.contextmanager
def hold(paths: outputs.OutputPaths, timeout: float, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the lock of one output document for the block; wait up to ``timeout`` seconds.

    ``say`` gets one line when the document is held by another run (its pid) and we wait. The
    holder record (:func:`holder_path`) is written once the lock is ours and removed before it
    is released, on success and on any exception alike.

    Raises:
        OutputLocked: still held after ``timeout`` seconds (0: do not wait); names the holder,
            the output and the fix.
    """
    folder = lock_dir(paths.out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(folder / f"{paths.name}.lock", timeout=timeout)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        who = _who(holder(paths))
        if timeout <= 0:
            raise _locked(paths, who, timeout) from None
        say(f"{paths.markdown}: held by {who}; waiting up to {timeout:g} s (--lock-timeout)")
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise _locked(paths, _who(holder(paths)), timeout) from None
    record = holder_path(paths)
    try:
        outputs.atomic_write_json(
            record,
            {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")},
        )
        yield
    finally:
        # still held: the next holder writes its own record only after it has the lock
        with contextlib.suppress(OSError):
            record.unlink()
        lock.release()


def _locked(paths: outputs.OutputPaths, who: str, timeout: float) -> OutputLocked:
    return OutputLocked(
        f"{paths.markdown} is being written by {who}",
        "wait for that run to finish and rerun the same command (finished documents are skipped), "
        f"raise --lock-timeout (now {timeout:g} s), or choose another -o",
    )
