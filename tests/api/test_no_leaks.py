"""Issue 25 item 7 (done-when 4): after jobs with a credentialed server URL, no API answer, metric,
log line, output file or job-database byte holds the credential or a server path (the venv, the
data dir); the data dir's files are 0600 and its dirs 0700. The service (uvicorn on 127.0.0.1) and
a fake OpenAI server, one good job and one whose server refuses every request.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import httpx
import pytest

from api.helpers import wait_job
from ocrstack.api.process import ServiceProcess
from ocrstack.testing.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.server]

SECRET = "s3cret-pa55word"


def _answers(c: httpx.Client, job_ids: list[str]) -> list[str]:
    """Every answer a client can get about these jobs, the service and its metrics (text)."""
    paths = ["/health", "/ready", "/metrics", "/v1/jobs", "/openapi.json"]
    for job_id in job_ids:
        base = f"/v1/jobs/{job_id}"
        paths += [base, f"{base}/result", f"{base}/result?format=json", f"{base}/result?format=zip"]
    texts = []
    for path in paths:
        r = c.get(path)
        texts.append(r.content.decode("utf-8", "replace") + repr(dict(r.headers)))
    return texts


def test_no_secret_or_server_path_in_answers_metrics_logs_or_files(tmp_path: Path, tiny_png: Path) -> None:
    data = tmp_path / "data"
    log = tmp_path / "service.log"
    with FakeOpenAIServer() as good, FakeOpenAIServer(status=400, error_message="no such model") as bad:
        url = good.url.replace("http://", f"http://ocr:{SECRET}@") + "/v1"
        bad_url = bad.url.replace("http://", f"http://ocr:{SECRET}@") + "/v1"
        args = ["--recognizer", "openai", "--server-url", url, "--server-url", bad_url, "--layout", "none"]
        with ServiceProcess(data, args, log=log) as svc, httpx.Client(base_url=svc.url, trust_env=False) as c:
            png = tiny_png.read_bytes()
            # a job names a server by its URL without credentials; the service adds them
            ok = c.post("/v1/jobs", files={"file": ("a.png", png)}, data={"server_urls": good.url}).json()
            assert "id" in ok, ok
            assert wait_job(c, ok["id"])["status"] == "done"
            failed = c.post("/v1/jobs", files={"file": ("b.png", png)}, data={"server_urls": bad.url}).json()
            assert wait_job(c, failed["id"])["status"] == "failed"
            refused = c.post(
                "/v1/jobs", files={"file": ("c.png", png)}, data={"server_urls": "http://x:y@h:1"}
            )
            assert refused.status_code == 400
            texts = _answers(c, [ok["id"], failed["id"]]) + [refused.text]
        assert good.requests and good.requests[-1].headers.get("Authorization", "").startswith("Basic ")
    files = [p for p in data.rglob("*") if p.is_file()]
    texts += [log.read_text(encoding="utf-8", errors="replace")]
    texts += [p.read_bytes().decode("utf-8", "replace") for p in files]
    server_paths = {"venv": sys.prefix, "data dir": str(data.resolve())}
    for i, text in enumerate(texts):
        assert SECRET not in text, f"credential in answer/file #{i}: ...{_near(text, SECRET)}..."
    for i, text in enumerate(texts[: -len(files) - 1]):  # answers: no server path either
        for what, path in server_paths.items():
            assert path not in text, f"{what} path in answer #{i}: ...{_near(text, path)}..."
    for p in [data, *data.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode & 0o077 == 0, f"{p} is {oct(mode)}"


def _near(text: str, needle: str) -> str:
    at = text.find(needle)
    return text[max(0, at - 80) : at + len(needle) + 40]
