""":class:`FakeOpenAIProcess`: the fake OpenAI server (:mod:`ocrstack.testing.fake_openai`) in a
process of its own, for a harness that measures latency.

In-process, the fake server's handler threads (each parses a JSON body holding a base64 page image)
share the measuring process's GIL: on a loaded machine a client timing a service request would
also wait for the fake recognizer's work. A real recognizer runs elsewhere (a GPU server), and so
does this one.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ocrstack.core.errors import ServerUnreachable


class FakeOpenAIProcess:
    """``python -m ocrstack.testing.fake_openai --port 0 --latency LATENCY`` while the ``with``
    block runs; ``url`` is its ``http://127.0.0.1:PORT`` (output appended to ``log``).

    Raises:
        ServerUnreachable: (on entering) it exited or printed no ``READY`` line within ``timeout`` s.
    """

    def __init__(self, log: Path, latency: float = 0.0, timeout: float = 60.0) -> None:
        self.log, self.latency, self.timeout = log, latency, timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def __enter__(self) -> FakeOpenAIProcess:
        argv = [sys.executable, "-m", "ocrstack.testing.fake_openai", "--port", "0",
                "--latency", f"{self.latency:g}"]  # fmt: skip
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("READY "):
                    self.url = line.split()[1]
                    return self
            time.sleep(0.05)
        self.__exit__()
        raise ServerUnreachable(
            f"the fake OpenAI server did not start (exit code {self.proc.returncode}); log: {self.log}",
            "read the log",
        )

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
