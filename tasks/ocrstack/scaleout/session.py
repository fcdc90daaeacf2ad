"""Joining or starting Ray for :class:`~ocrstack.scaleout.executor.RayExecutor`: the connection
(address forms, a fast failure where nothing listens) and the process environment a local Ray leaves.

A local ``ray.init`` changes this process's environment and keeps the change after
``ray.shutdown``: Ray 2.5x sets ``RAY_AUTH_MODE=token`` when ``~/.ray/auth_token`` exists. A later
driver in the same process that joins a cluster started without token authentication (a
``ray start`` cluster of another user, :class:`ocrstack.testing.ray_cluster.LoopbackCluster`) then
runs a core worker that the cluster's GCS cannot call: its ``WaitForActorRefDeleted`` poll of the
owner fails, and the GCS destroys every actor the driver creates ("all references to the actor
were removed ... The actor never ran - it was cancelled before it started running"). Every local
Ray this package starts is therefore wrapped in :func:`ray_env_kept`, which restores the ``RAY_*``
variables when that Ray stops.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ocrstack.core.errors import ServerUnreachable
from ocrstack.scaleout.options import LOCAL

#: Seconds to wait for a TCP connection to a cluster address before giving up (Ray itself retries
#: for minutes against an address where nothing listens).
CONNECT_TIMEOUT = 5.0
_INIT_LOCK = threading.Lock()


def ray_environment() -> dict[str, str]:
    """This process's ``RAY_*`` environment variables (what :func:`restore_ray_environment` puts back)."""
    return {k: v for k, v in os.environ.items() if k.startswith("RAY_")}


def restore_ray_environment(saved: dict[str, str]) -> None:
    """Make this process's ``RAY_*`` variables ``saved`` again (added ones removed, changed ones
    reset) and, when one changed, have Ray re-read them: Ray caches the auth mode in its C++
    ``RayConfig`` (Ray's own ``_enable_token_auth`` calls ``ray._raylet.Config.initialize("")``
    after setting ``RAY_AUTH_MODE``) and the token in ``AuthenticationTokenLoader``; both are
    refreshed here (Ray 2.60 internals; a Ray without them has nothing cached to refresh)."""
    if ray_environment() == saved:
        return
    for k in [k for k in os.environ if k.startswith("RAY_") and k not in saved]:
        del os.environ[k]
    os.environ.update(saved)
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


@contextmanager
def ray_env_kept() -> Iterator[None]:
    """Run a block that starts and stops a Ray (``ray.init`` ... ``ray.shutdown``) and restore the
    ``RAY_*`` environment after it (see the module note: a later driver joining another cluster
    from this process would otherwise lose every actor)."""
    saved = ray_environment()
    try:
        yield
    finally:
        restore_ray_environment(saved)


def connect(address: str, num_cpus: int | None) -> bool:
    """Initialise Ray unless it is; return True when this call started it (the caller then
    calls ``ray.shutdown`` and :func:`restore_ray_environment` when done).

    Args:
        address: :data:`~ocrstack.scaleout.options.LOCAL` (a Ray on 127.0.0.1 started here),
            ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``.
        num_cpus: CPUs of a local Ray (None: all of this machine's).

    Raises:
        ServerUnreachable: no Ray cluster at the address.
    """
    import ray

    with _INIT_LOCK:  # API worker threads: one ray.init per process
        if ray.is_initialized():
            return False
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address == LOCAL:
            kwargs.update(address="local", _node_ip_address="127.0.0.1", num_cpus=num_cpus)
        else:
            check_reachable(address)
            kwargs["address"] = address
            if _loopback(address):  # Ray rewrites 127.0.0.1 to the host's IP: join as 127.0.0.1
                kwargs["_node_ip_address"] = "127.0.0.1"
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ServerUnreachable(
                f"no Ray cluster at --ray-address {address}: {exc}",
                "start one (ray start --head) or check RAY_ADDRESS; --ray starts a local Ray",
            ) from None
        return True


def _loopback(address: str) -> bool:
    """True for a ``127.x.x.x:PORT`` / ``localhost:PORT`` GCS address (a cluster started with
    ``ray start --node-ip-address 127.0.0.1``: the driver must join its nodes on that address)."""
    host = address.rpartition(":")[0]
    return host == "localhost" or host.startswith("127.")


def check_reachable(address: str) -> None:
    """Fail in seconds when nothing listens at ``HOST:PORT`` / ``ray://HOST:PORT`` (``auto`` is
    left to Ray, which fails at once without a local cluster).

    Raises:
        ServerUnreachable: the TCP connection is refused or times out (address and fix named).
    """
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
