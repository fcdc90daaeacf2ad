"""``/docs`` is Swagger UI from the vendored assets (no CDN, issue 24 item 5); ``/redoc`` is gone."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from api.helpers import TESTSERVER
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.api.docs import SWAGGER


def test_docs_page_loads_only_local_assets(tmp_path: Path) -> None:
    client = TestClient(
        create_app(ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path / "data"))
    )  # no lifespan: no worker
    page = client.get("/docs")
    assert page.status_code == 200 and "SwaggerUIBundle" in page.text
    urls = re.findall(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""", page.text)
    assert f"{SWAGGER}/swagger-ui-bundle.js" in urls and f"{SWAGGER}/swagger-ui.css" in urls
    assert not [u for u in urls if "//" in u], urls
    for url in urls:
        assert client.get(url).status_code == 200, url
    assert client.get("/redoc").status_code == 404
    assert "/docs" not in client.get("/openapi.json").json()["paths"]
