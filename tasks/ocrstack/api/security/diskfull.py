"""The disk-full case (:mod:`ocrstack.api.security`, issue 25 item 3): ``ocrstack api serve`` with
its data dir on a real file system that fills up, a private 4 MiB tmpfs.

The service runs under ``unshare --user --map-root-user --mount``: a user and mount namespace of
its own, in which an unprivileged user may mount a tmpfs (Linux user namespaces); the mount is
seen by the service only and goes away with it. Uploads of about 1 MB are sent until one is
refused; what must hold: the refusal is a 507 ``{error, fix}`` (the server's disk, not the
client's request), ``/health`` answers within 1 s all along, ``/ready`` answers 503 while the data
dir takes no write, and once jobs are deleted the same process takes and finishes a new job (the
worker survived). Where ``unshare`` or user namespaces are missing, the case is not run, with
the reason in the row.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import time
from io import BytesIO
from pathlib import Path

import httpx
from PIL import Image, ImageDraw

from ocrstack.api.process import ServiceProcess
from ocrstack.api.security import Table
from ocrstack.testing.fake_openai import FakeOpenAIServer

#: Size of the data dir's file system: room for the job database and a few uploads.
TMPFS = "4m"
#: Most uploads sent before the disk must have been reported full.
MAX_UPLOADS = 12
CASE = "data dir fills up (4 MiB tmpfs, 1 MB uploads)"
EXPECTED = "507 {error, fix}; /health < 1 s; /ready 503; after DELETEs a new job is done"


def _wrap(data: Path) -> list[str]:
    """``unshare`` + ``sh`` mounting a :data:`TMPFS` tmpfs on ``data`` and exec-ing the rest."""
    script = 'mount -t tmpfs -o size=$1 ocrstack-full "$2" && shift 2 && exec "$@"'
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", TMPFS, str(data)]


def unavailable() -> str | None:
    """Why the case cannot run here (no ``unshare``, or no unprivileged mount namespaces), or None."""
    if shutil.which("unshare") is None:
        return "unshare (util-linux) not found"
    argv = ["unshare", "--user", "--map-root-user", "--mount", "true"]
    probe = subprocess.run(argv, capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"no unprivileged user/mount namespace here ({probe.stderr.strip()[:80]})"
    return None


def _upload(n: int, side: int = 1000) -> bytes:
    """A PNG of about ``side``² bytes (noise does not compress) with ink, different each time."""
    rng = random.Random(n)
    im = Image.frombytes("L", (side, side), rng.randbytes(side * side))
    ImageDraw.Draw(im).text((20, 20), f"upload {n}", fill=0)
    buf = BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def run(table: Table, root: Path) -> None:
    """Add the disk-full row to ``table`` (files under ``root``)."""
    why = unavailable()
    if why is not None:
        table.add(CASE, EXPECTED, f"not run: {why}", True)
        return
    table.attempt(CASE, EXPECTED, lambda: _fill(root))


def _fill(root: Path) -> tuple[str, bool]:
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    with FakeOpenAIServer() as fake:
        args = ["--recognizer", "openai", "--layout", "none", "--server-url", fake.url]
        with (
            ServiceProcess(data, args, log=root / "service.log", wrap=_wrap(data)) as svc,
            httpx.Client(base_url=svc.url, timeout=30, trust_env=False) as c,
        ):
            ids, refused, slowest = [], None, 0.0
            for n in range(MAX_UPLOADS):
                r = c.post("/v1/jobs", files={"file": (f"u{n}.png", _upload(n))})
                t0 = time.perf_counter()
                c.get("/health")
                slowest = max(slowest, time.perf_counter() - t0)
                if r.status_code == 202:
                    ids.append(r.json()["id"])
                    continue
                refused = r
                break
            if refused is None:
                return f"{MAX_UPLOADS} uploads taken: the data dir never filled", False
            json_answer = refused.headers.get("content-type", "").startswith("application/json")
            body = refused.json() if json_answer else {}
            side = 500
            while side >= 16:  # fill what is left with smaller uploads, until not even 256 B fit
                r = c.post("/v1/jobs", files={"file": (f"s{side}.png", _upload(side, side))})
                if r.status_code == 202:
                    ids.append(r.json()["id"])
                else:
                    side //= 2
            ready_full = c.get("/ready").status_code
            for job_id in ids:
                c.delete(f"/v1/jobs/{job_id}")
            deadline = time.monotonic() + 30
            while c.get("/ready").status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.2)
            again = c.post("/v1/jobs", files={"file": ("again.png", _upload(99))})
            status = "not taken"
            if again.status_code == 202:
                job = again.json()["id"]
                while time.monotonic() < deadline + 30:
                    status = c.get(f"/v1/jobs/{job}").json()["status"]
                    if status in ("done", "partial", "failed", "cancelled"):
                        break
                    time.sleep(0.2)
    observed = (
        f"upload {len(ids) + 1} answered {refused.status_code} ({str(body.get('error'))[:60]}; "
        f"fix given: {bool(body.get('fix'))}); /ready while full {ready_full}; "
        f"/health slowest {slowest * 1000:.0f} ms; new job after DELETEs: {status}"
    )
    held = (
        refused.status_code == 507 and bool(body.get("fix")) and ready_full == 503
        and slowest < 1.0 and status == "done"
    )  # fmt: skip
    return observed, held
