"""``DELETE`` of a job whose worker waits on a dripping recognizer frees the worker at once (issue 25
item 4): the service (uvicorn on 127.0.0.1) and a fake OpenAI server that sends one byte every
0.5 s (an answer would take minutes), bounded in time.

Before: DELETE answered "cancelled" but the worker stayed blocked in the request until the
server finished, so the next job never started.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from api.helpers import wait_job
from ocrstack.api.process import ServiceProcess
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until

pytestmark = [pytest.mark.server]


def _block_requests(srv: FakeOpenAIServer) -> int:
    return sum(1 for r in srv.requests if int(r.body.get("max_tokens") or 2) > 1)


def test_delete_interrupts_a_worker_blocked_on_a_dripping_server(tmp_path: Path, tiny_png: Path) -> None:
    with FakeOpenAIServer(drip=0.5) as srv:
        args = ["--recognizer", "openai", "--server-url", srv.url, "--layout", "none", "--concurrency", "1"]
        with (
            ServiceProcess(tmp_path / "data", args) as svc,
            httpx.Client(base_url=svc.url, trust_env=False, timeout=30) as c,
        ):
            png = tiny_png.read_bytes()
            first = c.post("/v1/jobs", files={"file": ("a.png", png)}).json()
            wait_until(lambda: _block_requests(srv) >= 1, "the job's block request reached the server")
            assert c.delete(first["status_url"]).json()["status"] == "cancelled"
            # the worker is back: the gauge drops to 0 long before the drip could end (minutes)
            wait_until(
                lambda: "ocrstack_jobs_in_flight 0.0" in c.get("/metrics").text,
                "the worker left the cancelled job",
                timeout=20,
                interval=0.2,
            )
            assert c.get(first["status_url"]).json()["status"] == "cancelled"
            srv.config.drip = None  # the next job gets normal answers, and runs
            second = c.post("/v1/jobs", files={"file": ("b.png", png)}).json()
            assert wait_job(c, second["id"], timeout=60)["status"] == "done"
