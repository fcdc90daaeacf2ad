"""The real service (uvicorn on 127.0.0.1) driven over HTTP: same Markdown as the CLI, errors as 4xx
JSON, backpressure, cancellation, API key, metrics. Recognizers: the embedded default and the fake
OpenAI server."""

from __future__ import annotations

import contextlib
import io
import zipfile
from pathlib import Path

import httpx
import pytest

from api.helpers import make_pdf, wait_job
from ocrstack.api.process import ServiceProcess
from ocrstack.testing.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.server]


def cli_markdown(src: Path, out: Path, *flags: str) -> bytes:
    """NAME.md written by ``ocrstack parse`` for ``src`` with ``flags`` (the CLI in this process)."""
    from ocrstack.cli import main

    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(["parse", str(src), "-o", str(out), "--no-progress", *flags]) == 0, err.getvalue()
    return (out / f"{src.stem}.md").read_bytes()


@pytest.fixture(scope="module")
def fake() -> FakeOpenAIServer:
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAIServer):
    """A service on the fake recognizer with an API key and small limits."""
    root = tmp_path_factory.mktemp("svc")
    args = ["--recognizer", "openai", "--server-url", fake.url, "--api-key", "k3y", "--max-upload-mb", "0.2",
            "--max-pages", "2", "--sync-max-pages", "1"]  # fmt: skip
    with ServiceProcess(root / "data", args, log=root / "service.log") as svc:
        yield svc


@pytest.fixture
def client(service: ServiceProcess) -> httpx.Client:
    with httpx.Client(base_url=service.url, headers={"X-API-Key": "k3y"}, timeout=60, trust_env=False) as c:
        yield c


def test_openai_markdown_equals_cli(
    client: httpx.Client, fake: FakeOpenAIServer, tiny_pdf: Path, tmp_path: Path
):
    with tiny_pdf.open("rb") as fh:
        r = client.post("/v1/parse", files={"file": (tiny_pdf.name, fh, "application/pdf")})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "success" and body["layout"] and {"type", "bbox"} <= set(body["layout"][0])
    api_md = client.get(f"/v1/jobs/{body['job_id']}/result", params={"format": "markdown"}).content
    assert api_md == body["markdown"].encode()
    assert api_md == cli_markdown(
        tiny_pdf, tmp_path / "cli", "--recognizer", "openai", "--server-url", fake.url
    )
    metrics = client.get("/metrics").text
    assert f'ocrstack_recognizer_requests_total{{server="{fake.url}"}}' in metrics
    assert f'ocrstack_recognizer_request_seconds_count{{server="{fake.url}"}}' in metrics
    assert f'ocrstack_recognizer_errors_total{{server="{fake.url}"}} 0.0' in metrics
    assert 'ocrstack_page_stage_seconds_count{stage="recognition"}' in metrics


def test_job_lifecycle_and_result_formats(client: httpx.Client, tiny_png: Path):
    r = client.post(
        "/v1/jobs", files={"file": ("../../outside.png", tiny_png.read_bytes())}, data={"dpi": "150"}
    )
    assert r.status_code == 202, r.text
    job = r.json()
    assert r.headers["location"] == job["status_url"] == f"/v1/jobs/{job['id']}"
    done = wait_job(client, job["id"])
    assert done["status"] == "done" and done["pages_done"] == done["pages_total"] == 1
    assert done["filename"] == "../../outside.png"
    blocks = client.get(job["result_url"], headers={"Accept": "application/json"}).json()
    assert blocks["pages"][0]["blocks"] and Path(blocks["source"]).name == "outside.png"
    assert blocks["source"] == "../../outside.png"  # the name the client sent, no server path
    z = zipfile.ZipFile(io.BytesIO(client.get(job["result_url"], params={"format": "zip"}).content))
    assert {"outside.md", "outside.blocks.json"} <= set(z.namelist())
    assert not any(".ocrstack-cache" in n for n in z.namelist())
    image = client.get(f"/v1/jobs/{job['id']}/pages/1/image")
    assert image.headers["content-type"] == "image/png" and image.content[:4] == b"\x89PNG"
    assert client.get(job["result_url"], params={"format": "docx"}).status_code == 400
    assert client.delete(f"/v1/jobs/{job['id']}").json()["status"] == "deleted"
    assert client.get(job["status_url"]).status_code == 404


@pytest.mark.parametrize(
    ("name", "data", "fields", "status", "words"),
    [
        ("x.pdf", b"hello, not a document", {}, 422, "not a PDF or a supported image"),
        ("empty.png", b"", {}, 422, "file is empty"),
        ("big.pdf", b"%PDF-1.4\n" + b"0" * 300_000, {}, 413, "over the limit"),
        ("t.pdf", None, {"dpi": "0"}, 400, "form field dpi"),
        ("t.pdf", None, {"layout": "bogus"}, 400, "unknown layout kind 'bogus'"),
        ("t.pdf", None, {"server_urls": "http://169.254.169.254"}, 400, "not one of this service's"),
        ("t.pdf", None, {"prompts": "/etc/passwd"}, 400, "not a built-in prompt set"),
        ("t.pdf", None, {"pages": "9"}, 400, "beyond the last page"),
        ("t.pdf", None, {"nonsense": "1"}, 400, "unknown option"),
        ("three.pdf", "3pages", {}, 422, "3 pages selected, the limit is 2"),
    ],
)
def test_bad_uploads_get_4xx_json(client, tiny_pdf, tmp_path, name, data, fields, status, words):
    if data is None:
        data = tiny_pdf.read_bytes()
    elif data == "3pages":
        data = make_pdf(tmp_path / "three.pdf", pages=3).read_bytes()
    r = client.post("/v1/jobs", files={"file": (name, data)}, data=fields)
    assert r.status_code == status, r.text
    body = r.json()
    assert words in body["error"] and body["fix"], body
    assert str(tmp_path) not in body["error"] and "/jobs/" not in body["error"]


def test_sync_parse_page_limit_and_missing_file(client: httpx.Client, tmp_path: Path):
    two = make_pdf(tmp_path / "two.pdf", pages=2).read_bytes()
    r = client.post("/v1/parse", files={"file": ("two.pdf", two)})
    assert r.status_code == 422 and "POST /v1/jobs" in r.json()["fix"]
    r = client.post("/v1/jobs", data={"dpi": "100"})
    assert r.status_code == 400 and "not multipart" in r.json()["error"] or "no file" in r.json()["error"]


def test_api_key_required_and_never_logged(service: ServiceProcess, tiny_png: Path):
    with httpx.Client(base_url=service.url, trust_env=False) as anon:
        assert anon.get("/v1/jobs/abc").status_code == 401
        r = anon.post(
            "/v1/jobs", headers={"X-API-Key": "wrong"}, files={"file": ("a.png", tiny_png.read_bytes())}
        )
        assert r.status_code == 401 and r.json()["error"].startswith("wrong API key (header X-API-Key")
        assert "--api-key" in r.json()["fix"]
        assert anon.get("/v1/jobs/abc", headers={"Authorization": "Bearer k3y"}).status_code == 404
        assert anon.get("/health").json() == {"status": "ok"} and anon.get("/ready").status_code == 200
        assert anon.get("/").headers["content-type"].startswith("text/html")
        assert (
            "access-control-allow-origin" not in anon.get("/health", headers={"Origin": "http://x"}).headers
        )
    assert "k3y" not in service.log.read_text()


def test_queue_full_429_and_cancel(tmp_path: Path, tiny_png: Path):
    with FakeOpenAIServer(latency=1.0, max_concurrent=1) as slow:
        args = ["--recognizer", "openai", "--server-url", slow.url, "--max-queue", "2", "--concurrency", "1",
                "--layout", "none"]  # fmt: skip
        with (
            ServiceProcess(tmp_path / "data", args) as svc,
            httpx.Client(base_url=svc.url, trust_env=False) as c,
        ):
            png = tiny_png.read_bytes()
            first = c.post("/v1/jobs", files={"file": ("a.png", png)}).json()
            second = c.post("/v1/jobs", files={"file": ("b.png", png)}).json()
            r = c.post("/v1/jobs", files={"file": ("c.png", png)})
            assert r.status_code == 429 and int(r.headers["retry-after"]) > 0 and r.json()["fix"]
            assert c.get(second["status_url"]).json()["position"] in (0, 1)
            assert c.delete(second["status_url"]).json()["status"] == "cancelled"
            assert c.get(second["status_url"]).json()["status"] == "cancelled"
            assert wait_job(c, first["id"])["status"] == "done"
            assert "ocrstack_queue_depth 0.0" in c.get("/metrics").text


@pytest.mark.slow
def test_embedded_default_markdown_equals_cli(tmp_path: Path, tiny_pdf: Path):
    """Default settings (rapid-layout + rapidocr on CPU)."""
    with (
        ServiceProcess(tmp_path / "data") as svc,
        httpx.Client(base_url=svc.url, timeout=300, trust_env=False) as c,
    ):
        r = c.post("/v1/parse", files={"file": (tiny_pdf.name, tiny_pdf.read_bytes())})
        assert r.status_code == 200, r.text
        api_md = r.json()["markdown"].encode()
    assert b"Report part 1" in api_md
    assert api_md == cli_markdown(tiny_pdf, tmp_path / "cli")


def test_cancel_a_running_job_then_the_next_one_runs(tmp_path: Path):
    five = make_pdf(tmp_path / "five.pdf", pages=5).read_bytes()
    with FakeOpenAIServer(latency=0.5, max_concurrent=1) as slow:
        args = ["--recognizer", "openai", "--server-url", slow.url, "--layout", "none", "--concurrency", "1"]
        with (
            ServiceProcess(tmp_path / "data", args) as svc,
            httpx.Client(base_url=svc.url, trust_env=False) as c,
        ):
            first = c.post("/v1/jobs", files={"file": ("five.pdf", five)}).json()
            second = c.post("/v1/jobs", files={"file": ("next.pdf", five)}, data={"pages": "1"}).json()
            assert wait_job(c, first["id"], until=("running",))["status"] == "running"
            assert c.delete(first["status_url"]).json() == {"id": first["id"], "status": "cancelled"}
            assert wait_job(c, second["id"])["status"] == "done"
            body = c.get(first["status_url"]).json()
            assert body["status"] == "cancelled"
            assert c.get(first["result_url"]).status_code == 409
            assert not (tmp_path / "data" / "jobs" / first["id"]).exists()
            requests_for_first = len(slow.requests) - 2  # the second job: probe + 1 page
            assert requests_for_first < 1 + 5  # probe + fewer than all 5 pages


def test_rejecting_recognizer_fails_the_job_with_its_message(tmp_path: Path, tiny_png: Path):
    with FakeOpenAIServer(status=400, error_message="model 'x' does not exist") as bad:
        args = ["--recognizer", "openai", "--server-url", bad.url, "--layout", "none"]
        with (
            ServiceProcess(tmp_path / "data", args) as svc,
            httpx.Client(base_url=svc.url, trust_env=False) as c,
        ):
            r = c.post("/v1/parse", files={"file": ("a.png", tiny_png.read_bytes())})
            assert r.status_code == 409, r.text
            assert "does not exist" in r.json()["error"] and r.json()["fix"]
            job = c.post("/v1/jobs", files={"file": ("a.png", tiny_png.read_bytes())}).json()
            failed = wait_job(c, job["id"])
            assert failed["status"] == "failed" and "does not exist" in failed["error"]
            assert 'ocrstack_jobs{state="failed"} 2.0' in c.get("/metrics").text
