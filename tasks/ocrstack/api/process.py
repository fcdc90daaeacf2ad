"""Start ``ocrstack api serve`` as a child process on 127.0.0.1 and stop it (load run, tests).

The child prints ``READY http://127.0.0.1:PORT`` once listening (``--port 0`` picks a free
port); :meth:`ServiceProcess.start` waits for that line, then for ``GET /ready``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from ocrstack.core.errors import ServerUnreachable


class ServiceProcess:
    """One service process.

    Args:
        data_dir: ``--data-dir`` (reuse it after :meth:`kill` to test recovery).
        args: further ``ocrstack api serve`` flags.
        log: file receiving the child's stdout+stderr (appended).
        env: variables set for the child on top of this process's environment (a secret such as
            ``OCRSTACK_WEBHOOK_SECRET`` goes here, not on its command line).
        wrap: an argument list the service's own is appended to (a program that sets up the
            child's world and then execs it, e.g. ``unshare`` with a tmpfs data dir).
    """

    def __init__(
        self,
        data_dir: Path,
        args: Sequence[str] = (),
        log: Path | None = None,
        env: Mapping[str, str] | None = None,
        wrap: Sequence[str] = (),
    ) -> None:
        self.data_dir = Path(data_dir)
        self.args = list(args)
        self.env = dict(env or {})
        self.wrap = list(wrap)
        self.log = log or self.data_dir.parent / "service.log"
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, timeout: float = 120.0) -> ServiceProcess:
        """Start and wait until ``/ready`` answers 200.

        Raises:
            ServerUnreachable: the process exited or did not become ready within ``timeout``.
        """
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [*self.wrap, sys.executable, "-m", "ocrstack", "api", "serve", "--port", "0",
               "--data-dir", str(self.data_dir), *self.args]  # fmt: skip
        env = {**os.environ, **self.env, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        ready = threading.Event()
        log = self.log.open("a", encoding="utf-8")

        def pump() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                log.write(line)
                log.flush()
                if line.startswith("READY "):
                    self.url = line.split()[1]
                    ready.set()
            log.close()

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not ready.wait(0.1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise ServerUnreachable(
                    f"ocrstack api serve did not start: {self._tail()}", f"read {self.log}"
                )
        why = "no answer"
        while time.monotonic() < deadline:
            try:
                r = httpx.get(f"{self.url}/ready", timeout=5, trust_env=False)
                if r.status_code == 200:
                    return self
                why = r.text
                if "models are loading" not in why:  # the engines failed: waiting will not help
                    break
            except httpx.HTTPError as exc:
                why = type(exc).__name__
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise ServerUnreachable(
            f"ocrstack api serve never became ready ({why}): {self._tail()}", f"read {self.log}"
        )

    def _tail(self, lines: int = 5) -> str:
        """The last lines of the log, joined with " | " (for one-line error messages)."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(line for line in text[-lines:] if line.strip())

    @property
    def pid(self) -> int:
        """The child's process id."""
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL (no cleanup at all: what a crash or the OOM killer does) and reap."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
