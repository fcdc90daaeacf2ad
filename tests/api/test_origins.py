"""Issue 25 item 5: the keyless loopback service answers only its own Host names, and refuses a
state-changing request a browser marks as coming from another site; API clients (no Origin) work."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.helpers import make_page
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.api.origins import allowed_hosts, host_name

OWN = "http://127.0.0.1:8800"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    """The default loopback service (no worker started), CORS for one configured origin."""
    data = tmp_path_factory.mktemp("api") / "data"
    return create_app(ServiceConfig(data_dir=data, cors_origins=("http://app.example",)))


@pytest.fixture(scope="module")
def client(app: FastAPI) -> TestClient:
    return TestClient(app, base_url=OWN)


@pytest.fixture(scope="module")
def png(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path: Path = tmp_path_factory.mktemp("doc") / "note.png"
    make_page("Short note", "One page.").save(path)
    return path.read_bytes()


def submit(client: TestClient, png: bytes, **headers: str):
    return client.post("/v1/jobs", files={"file": ("note.png", png, "image/png")}, headers=headers)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8800", "127.0.0.1.evil.example", "0.0.0.0"])
def test_a_foreign_host_is_refused(client: TestClient, host: str) -> None:
    r = client.get("/health", headers={"Host": host})
    assert r.status_code == 400
    assert r.json()["error"] == f"Host {host!r} is not a name of this service"
    assert "--allowed-host" in r.json()["fix"]


@pytest.mark.parametrize("host", ["127.0.0.1:8800", "localhost:8800", "LOCALHOST", "[::1]:8800", "127.0.0.1"])
def test_the_service_s_own_names_are_answered(client: TestClient, host: str) -> None:
    assert client.get("/health", headers={"Host": host}).status_code == 200


def test_allowed_host_adds_a_name(tmp_path: Path) -> None:
    app = create_app(ServiceConfig(data_dir=tmp_path / "d", allowed_hosts=("ocr.internal",)))
    c = TestClient(app, base_url=OWN)
    assert c.get("/health", headers={"Host": "ocr.internal:8800"}).status_code == 200
    assert c.get("/health", headers={"Host": "other.internal"}).status_code == 400


def test_a_wildcard_bind_without_names_checks_no_host() -> None:
    assert allowed_hosts("0.0.0.0", ()) is None
    assert allowed_hosts("0.0.0.0", ("ocr.example",)) == {
        "0.0.0.0",
        "localhost",
        "127.0.0.1",
        "::1",
        "ocr.example",
    }
    assert host_name("[::1]:80") == "::1" and host_name("::1") == "::1"


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:9999"},  # another loopback origin (the reported no-cors POST)
        {"Origin": "http://evil.example"},
        {"Origin": "null"},  # sandboxed frame, file:// page
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "https://127.0.0.1:8800"},  # another scheme is another origin
    ],
)
def test_a_cross_site_post_is_refused(client: TestClient, png: bytes, headers: dict) -> None:
    r = submit(client, png, **headers)
    assert r.status_code == 403, r.text
    assert r.json()["error"].startswith("POST from another site (")
    assert "--cors-origin" in r.json()["fix"]
    assert client.app.state.service.store.counts()["queued"] == 0  # no job was created


def test_a_cross_site_delete_is_refused(client: TestClient) -> None:
    r = client.delete("/v1/jobs/abc", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and r.json()["error"].startswith("DELETE from another site")


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, httpx, ocrstack parse --api: no Origin
        {"Origin": OWN, "Sec-Fetch-Site": "same-origin"},  # the service's own web page
        {"Origin": "http://app.example"},  # a configured --cors-origin
        {"Sec-Fetch-Site": "none"},  # typed by the user
    ],
)
def test_api_clients_and_own_origins_may_post(app: FastAPI, png: bytes, headers: dict) -> None:
    r = submit(TestClient(app, base_url=OWN), png, **headers)
    assert r.status_code == 202, r.text
    app.state.service.store.delete(r.json()["id"])


def test_reads_from_another_site_are_not_refused(client: TestClient) -> None:
    """GET changes nothing; CORS (off by default) keeps its answer from a foreign page."""
    r = client.get("/health", headers={"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 200
    assert "access-control-allow-origin" not in r.headers
