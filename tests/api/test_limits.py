"""Issue 25 item 2: every number a request may set has a service-side bound the operator sets
(``api serve --max-dpi`` ...), ``nan``/``inf``/negative values are refused with the field named,
and a page image is rendered once per job and page, not on every call."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.helpers import TESTSERVER, make_page, make_pdf
from ocrstack.api import config as api_config
from ocrstack.api import options as api_options
from ocrstack.api import pageimages
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.core import options as opt
from ocrstack.parsing.options import ParseOptions

REQUEST = {f.name: s for f, s in opt.specs(ParseOptions, opt.REQUEST)}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    """The app without its worker (no lifespan): accepted jobs stay queued."""
    return create_app(
        ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path_factory.mktemp("api") / "data")
    )


@pytest.fixture(scope="module")
def png(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path: Path = tmp_path_factory.mktemp("doc") / "note.png"
    make_page("Short note", "One page.").save(path)
    return path.read_bytes()


def post(app: FastAPI, png: bytes, **fields: str):
    return TestClient(app).post("/v1/jobs", files={"file": ("note.png", png, "image/png")}, data=fields)


def test_every_request_settable_number_has_a_bound() -> None:
    numbers = {name for name, s in REQUEST.items() if s.convert in (int, float)}
    assert numbers - {"limit"} == set(api_config.REQUEST_BOUNDS)  # limit: bounded by --max-pages
    flags = {flag for _, (_, flag) in api_config.request_bounds(ServiceConfig()).items()}
    assert {"--max-dpi", "--max-request-pixels", "--max-retries", "--max-request-timeout"} <= flags


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"dpi": "2400", "max_pixels": "1000000000000"}, "dpi 2400 is over this service's limit of 600"),
        ({"max_pixels": "1000000000000"}, "max_pixels 1e+12 is over this service's limit of 1e+08"),
        ({"retries": "1000000000"}, "retries 1e+09 is over this service's limit of 10"),
        ({"request_timeout": "7200"}, "request_timeout 7200 is over this service's limit of 3600"),
        ({"progress_timeout": "1e9"}, "progress_timeout 1e+09 is over this service's limit of 3600"),
    ],
)
def test_a_number_over_its_bound_is_refused(app: FastAPI, png: bytes, fields: dict, said: str) -> None:
    r = post(app, png, **fields)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == said
    assert "ocrstack api serve --max-" in r.json()["fix"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
@pytest.mark.parametrize("name", ["request_timeout", "ready_timeout", "progress_timeout"])
def test_nan_and_inf_are_refused(app: FastAPI, png: bytes, name: str, value: str) -> None:
    r = post(app, png, **{name: value})
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith(f"form field {name} must be a finite number")
    assert r.json()["fix"].startswith(f"use e.g. form field {name} ")


@pytest.mark.parametrize(("name", "value"), [("retries", "-1"), ("dpi", "-200"), ("request_timeout", "-5")])
def test_negative_values_are_refused(app: FastAPI, png: bytes, name: str, value: str) -> None:
    r = post(app, png, **{name: value})
    assert r.status_code == 400, r.text
    assert f"form field {name} must be" in r.json()["error"]


def test_values_within_the_bounds_are_accepted(app: FastAPI, png: bytes) -> None:
    r = post(app, png, dpi="600", retries="10", request_timeout="3600", max_pixels="100000000")
    assert r.status_code == 202, r.text


def test_the_operator_sets_the_bounds(tmp_path: Path, png: bytes) -> None:
    app = create_app(
        ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path / "data", max_dpi=150, max_retries=0)
    )
    assert post(app, png, dpi="150", retries="0").status_code == 202
    r = post(app, png, dpi="151")
    assert r.status_code == 400 and "limit of 150" in r.json()["error"]
    assert "--max-dpi" in r.json()["fix"]


def test_the_service_defaults_are_not_bounded(tmp_path: Path) -> None:
    """The bound is on what a client asks; the operator's own default may be above it."""
    base = ParseOptions(inputs=(), dpi=300)
    bounds = api_config.request_bounds(ServiceConfig(max_dpi=200))
    assert api_options.from_form({}, base=base, allowed_server_urls=(), bounds=bounds).dpi == 300


def test_a_page_image_is_rendered_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    renders: list[int] = []
    real = pageimages.render

    def counted(opts, page):
        renders.append(page)
        return real(opts, page)

    monkeypatch.setattr(pageimages, "render", counted)
    app = create_app(ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path / "data"))
    client = TestClient(app)
    pdf = make_pdf(tmp_path / "two.pdf", pages=2)
    r = client.post(
        "/v1/jobs", files={"file": ("two.pdf", pdf.read_bytes(), "application/pdf")}, data={"dpi": "50"}
    )
    assert r.status_code == 202, r.text
    url = f"/v1/jobs/{r.json()['id']}/pages/1/image"
    bodies = [client.get(url) for _ in range(3)]
    assert [b.status_code for b in bodies] == [200, 200, 200]
    assert bodies[0].content == bodies[2].content and bodies[0].content.startswith(b"\x89PNG")
    assert renders == [1]
    assert client.get(url.replace("/1/", "/2/")).status_code == 200
    assert renders == [1, 2]
