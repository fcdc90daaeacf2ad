"""Run the app under uvicorn (``ocrstack api serve``)."""

from __future__ import annotations

import logging
import sys

from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.core.errors import UsageError

#: Hosts that only this machine can reach (the default bind, brief: servers bind 127.0.0.1).
LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def serve(config: ServiceConfig) -> None:
    """Serve until interrupted; prints ``READY http://HOST:PORT`` on stdout once listening.

    Raises:
        UsageError: a non-loopback ``host`` without an API key (anyone on the network could use it);
            ``--webhook-host`` without a secret to sign the callbacks.
    """
    import uvicorn

    if config.host not in LOOPBACK and not config.api_key:
        raise UsageError(
            f"--host {config.host} exposes the service beyond this machine without an API key",
            "set --api-key (or $OCRSTACK_API_KEY), or keep the default --host 127.0.0.1",
        )
    if config.webhook_hosts and not config.webhook_secret:
        raise UsageError(
            "--webhook-host is set but callbacks would go unsigned",
            "set --webhook-secret (or $OCRSTACK_WEBHOOK_SECRET)",
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    app = create_app(config)

    class _Server(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            port = self.servers[0].sockets[0].getsockname()[1] if self.servers else config.port
            print(f"READY http://{config.host}:{port}", flush=True)
            sys.stdout.flush()

    server = _Server(
        uvicorn.Config(app, host=config.host, port=config.port, log_level="info", access_log=False)
    )
    server.run()
