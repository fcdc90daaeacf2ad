"""A profile server for the length of a ``with`` block: 127.0.0.1, a free port, always stopped.

Used by ``ocrstack verify --tiny`` (guide 7 on CPU: a real ``transformers serve`` of the tiny
checkpoint), handed to the verify stage by the commands layer.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ocrstack.client.readiness import wait_ready
from ocrstack.serving import plan, process
from ocrstack.serving.options import ServeOptions


@contextmanager
def transformers_server(model_dir: Path, run_dir: Path, timeout: float = 300.0) -> Iterator[tuple[str, str]]:
    """Start ``transformers serve MODEL`` on 127.0.0.1:<free port>; yield ``(url, served model)``; stop it.

    The log doctor explains a fatal server log line while waiting, as for ``ocrstack serve``
    (:func:`ocrstack.client.readiness.wait_ready`). The server is stopped however the block ends.

    Raises:
        ServerUnreachable / ServerRejected: the server never became ready (with the doctor's diagnosis).
    """
    port = process.free_port()
    opts = ServeOptions(
        profile="tf",
        vars={"model": str(model_dir), "port": port, "host": "127.0.0.1"},
        venv=Path(sys.prefix),
        gpu="",
        run_dir=run_dir,
        offline=True,
        wait=False,
        restart=False,
    )
    lp = plan.plan(opts)
    popen = process.start(lp)
    try:
        out = wait_ready(
            lp.url,
            lp.served_model,
            timeout=timeout,
            log=lp.log_file,
            process=popen,
            pset=lp.pset,
        )
        out.raise_for_failure()
        yield lp.url, lp.served_model
    finally:
        process.stop_pid(popen.pid, grace=20.0)
