"""Issue 25 items 8 and 10 against the app in this process (no worker started): invented HTTP
methods make one metric label, not a series each; every answer carries the security headers; a
public bind refuses a short API key."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from ocrstack.api.app import METHODS, PRIVATE_PATHS, SECURITY_HEADERS, create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.api.server import MIN_PUBLIC_KEY_CHARS, serve
from ocrstack.core.errors import UsageError


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    return create_app(ServiceConfig(data_dir=tmp_path_factory.mktemp("api") / "data"))


@pytest.fixture(scope="module")
def client(app: FastAPI) -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1:8800")


def test_invented_methods_share_one_metric_label(client: TestClient) -> None:
    for i in range(200):  # the attack used 3,000 methods: 60,000 new series
        client.request(f"X{i:04d}", "/health")
    text = client.get("/metrics").text
    counted = re.findall(r'^ocrstack_http_requests_total\{method="([^"]+)".*$', text, re.MULTILINE)
    assert set(counted) <= METHODS | {"other"} and "other" in counted
    assert counted.count("other") == 1  # one series (route, status) for all 200, not 200
    assert text.count('method="other"') < 40  # one counter and one histogram series (~20 lines), not 200


@pytest.mark.parametrize("path", ["/", "/docs", "/health", "/v1/jobs/x"])
def test_every_answer_carries_the_security_headers(client: TestClient, path: str) -> None:
    headers = client.get(path).headers
    for name, value in SECURITY_HEADERS.items():
        assert headers[name] == value, name
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


@pytest.mark.parametrize("key", ["k", "x" * (MIN_PUBLIC_KEY_CHARS - 1)])
def test_a_public_bind_refuses_a_short_key(tmp_path, key: str) -> None:
    with pytest.raises(UsageError, match=f"at least {MIN_PUBLIC_KEY_CHARS} needed"):
        serve(ServiceConfig(host="0.0.0.0", data_dir=tmp_path, api_key=key))


@pytest.mark.parametrize("private", [False, True])
def test_metrics_and_docs_want_the_key_only_when_the_operator_chooses(tmp_path, private: bool) -> None:
    config = ServiceConfig(data_dir=tmp_path / "data", api_key="k" * 16, private_docs=private)
    client = TestClient(create_app(config), base_url="http://127.0.0.1:8800")
    for path in PRIVATE_PATHS:
        anonymous = client.get(path)
        assert anonymous.status_code == (401 if private else 200), path
        assert client.get(path, headers={"X-API-Key": "k" * 16}).status_code == 200, path
    assert client.get("/health").status_code == 200  # probes stay open
    assert client.get("/metrics").headers["x-content-type-options"] == "nosniff"
