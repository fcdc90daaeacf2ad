"""Run the app under uvicorn (``ocrstack api serve``)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.core.errors import ConfigError, UsageError

#: Hosts that only this machine can reach (the default bind, brief: servers bind 127.0.0.1).
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
#: Shortest API key accepted on a non-loopback bind (issue 25 item 10): 16 random hex characters
#: are 64 bits, out of reach of online guessing at any request rate this service answers.
MIN_PUBLIC_KEY_CHARS = 16


def serve(config: ServiceConfig) -> None:
    """Serve until interrupted; prints ``READY http://HOST:PORT`` on stdout once listening.

    Raises:
        ConfigError: another ``api serve`` holds the SQLite ``--data-dir``.
        UsageError: a non-loopback ``host`` without an API key (anyone on the network could use it)
            or with one shorter than :data:`MIN_PUBLIC_KEY_CHARS`;
            ``--webhook-host`` without a secret to sign the callbacks.
    """
    import uvicorn

    if config.host not in LOOPBACK and not config.api_key:
        raise UsageError(
            f"--host {config.host} exposes the service beyond this machine without an API key",
            "set --api-key (or $OCRSTACK_API_KEY), or keep the default --host 127.0.0.1",
        )
    if config.host not in LOOPBACK and len(config.api_key or "") < MIN_PUBLIC_KEY_CHARS:
        raise UsageError(
            f"--host {config.host} with an API key of {len(config.api_key or '')} character(s): "
            f"a key guessable from the network (at least {MIN_PUBLIC_KEY_CHARS} needed)",
            "make one with: openssl rand -hex 16 (32 characters)",
        )
    if config.webhook_hosts and not config.webhook_secret:
        raise UsageError(
            "--webhook-host is set but callbacks would go unsigned",
            "set --webhook-secret (or $OCRSTACK_WEBHOOK_SECRET)",
        )
    # the service's files (database, uploads, results) are its own: 0600 files, 0700 dirs (issue 25 item 7)
    os.umask(0o077)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # httpx logs every request's full URL at INFO, credentials included (issue 25 item 7)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from filelock import FileLock, Timeout

    from ocrstack.api.slowclients import HeadDeadline
    from ocrstack.api.stores import is_postgres

    lock = None
    if not is_postgres(config.database):  # one process per SQLite data dir (issue 25 item 10)
        Path(config.data_dir).mkdir(parents=True, exist_ok=True)
        lock = FileLock(Path(config.data_dir) / "serve.lock", timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise ConfigError(
                f"another ocrstack api serve uses --data-dir {config.data_dir}: a second one would "
                "requeue that one's running jobs",
                "stop the other service, or give this one its own --data-dir "
                "(several replicas share a PostgreSQL --database)",
            ) from None
    app = create_app(config)

    class _Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            port = self.servers[0].sockets[0].getsockname()[1] if self.servers else config.port
            print(f"READY http://{config.host}:{port}", flush=True)
            sys.stdout.flush()

    server = _Server(
        uvicorn.Config(
            app, host=config.host, port=config.port, log_level="info", access_log=False, http=HeadDeadline
        )
    )
    try:
        server.run()
    finally:
        if lock is not None:
            lock.release()
