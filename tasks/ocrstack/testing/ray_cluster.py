"""A Ray cluster of ``ray start`` nodes on one machine for the tests and the bench (issue 23 item 3).

Each node is ``ray start --block`` in its own process group (``start_new_session``), so a node is
removed by killing its group: its raylet, object store and workers go together, as when a machine
dies. Every node uses a private ``--temp-dir`` and ``RAY_TMPDIR`` (no ``/tmp/ray/ray_current_cluster``
is written, which would make other tests' ``ray.init()`` join this cluster), token authentication
off (Ray 2.5x enables it for ``ray start`` when ``~/.ray/auth_token`` exists) and a fast node-death
detector (0.5 s health checks, 3 misses). :meth:`LoopbackCluster.close` kills every group it started.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ocrstack.core.errors import ServerUnreachable

#: Seconds a node may take to start on a loaded 2-core machine.
START_TIMEOUT = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackCluster:
    """A head node and worker nodes on 127.0.0.1; ``address`` is the head's GCS ``HOST:PORT``.

    Args:
        head_cpus: logical CPUs of the head node.
        worker_cpus: logical CPUs of each worker node, one node per entry.
    """

    def __init__(self, head_cpus: int, worker_cpus: tuple[int, ...] = ()) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ocrstack-ray-"))
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = dict(
            os.environ,
            RAY_TMPDIR=str(self.dir),
            RAY_AUTH_MODE="disabled",
            RAY_health_check_period_ms="500",
            RAY_health_check_failure_threshold="3",
            RAY_health_check_initial_delay_ms="0",
        )
        self.nodes: list[subprocess.Popen] = []
        self._ray = str(Path(sys.executable).parent / "ray")
        try:
            self._start(["--head", "--port", str(self.port), "--include-dashboard", "false",
                         "--temp-dir", str(self.dir)], head_cpus)  # fmt: skip
            self._wait_head()
            for cpus in worker_cpus:
                self._start(["--address", self.address], cpus)
        except BaseException:
            self.close()
            raise

    def _start(self, args: list[str], cpus: int) -> None:
        n = len(self.nodes)
        log = (self.dir / f"node{n}.log").open("wb")
        argv = [self._ray, "start", "--block", "--node-ip-address", "127.0.0.1", "--num-cpus", str(cpus),
                "--disable-usage-stats", *args]  # fmt: skip
        self.nodes.append(
            subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        )

    def _wait_head(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and self.nodes[0].poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise ServerUnreachable(
            f"the Ray head on {self.address} did not start within {START_TIMEOUT:.0f} s",
            f"read its log {self.dir / 'node0.log'}",
        )

    def kill(self, node: int) -> None:
        """SIGKILL node ``node``'s process group (0 is the head)."""
        try:
            os.killpg(self.nodes[node].pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.nodes[node].wait(timeout=30)

    def close(self) -> None:
        """Kill every node this cluster started (workers first) and remove its temp dir."""
        for n in reversed(range(len(self.nodes))):
            self.kill(n)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> LoopbackCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
