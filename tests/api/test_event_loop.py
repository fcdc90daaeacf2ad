"""The job database is read and written off the event loop: a submit whose database call is slow
(a PostgreSQL restart: up to ``reconnect`` seconds) does not hold up the replica's other requests.
Before, ``POST /v1/jobs`` called the store on the event loop and every status poll of the replica
waited for it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from api.helpers import TESTSERVER, make_page
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig


def test_a_slow_database_call_of_a_submit_does_not_block_other_requests(tmp_path: Path) -> None:
    app = create_app(ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path / "data"))  # no worker
    store = app.state.service.store
    counts = store.counts

    def slow_counts() -> dict[str, int]:
        time.sleep(1.5)
        return counts()

    store.counts = slow_counts
    make_page("Note", "One page.").save(tmp_path / "note.png")
    png = (tmp_path / "note.png").read_bytes()

    async def run() -> tuple[int, float, int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{TESTSERVER[0]}") as c:
            t0 = time.perf_counter()
            submit = asyncio.create_task(c.post("/v1/jobs", files={"file": ("note.png", png, "image/png")}))
            await asyncio.sleep(0.2)  # the submit is in its database call now
            health = await c.get("/health")
            waited = time.perf_counter() - t0  # the sleep and /health: well under the 1.5 s call
            return health.status_code, waited, (await submit).status_code

    health, waited, submitted = asyncio.run(run())
    assert (health, submitted) == (200, 202)
    assert waited < 1.0, f"/health waited {waited:.2f} s for the submit's database call"
    store.close()
