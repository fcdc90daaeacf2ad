"""Every parse option marked request-settable reaches a job's ParseOptions through the real HTTP
app; every other option sent in a request is refused (4xx naming it); every service-settable one is
an ``ocrstack api serve`` flag that reaches the jobs' defaults. Walks the declaration
(ocrstack.parsing.options), so a new option is covered the moment it is declared."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.helpers import TESTSERVER, make_page
from ocrstack.api import options as api_options
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.cli import build_parser
from ocrstack.core import options as opt
from ocrstack.parsing import options as parse_options
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.recognition.openai import prompts as prompt_sets

SERVERS = ("http://127.0.0.1:9001", "http://127.0.0.1:9002")
#: Free-text options: no choices or range to derive a valid non-default value from.
TEXT = {"pages": "1", "model": "another-model", "password": "pw", "server_urls": SERVERS[1], "api_key": "k"}
DECLARED = {f.name: (f, s) for f, s in opt.specs(ParseOptions)}
NOT_REQUEST = [name for name in DECLARED if name not in api_options.FIELDS]


def non_default(name: str) -> str:
    """A valid value of option ``name`` other than its default, as a form field / flag string."""
    f, s = DECLARED[name]
    default = opt.default_of(f)
    if name == "prompts":
        return next(n for n in prompt_sets.builtin_names() if n != default)
    if name in TEXT:
        return TEXT[name]
    if s.choices is not None:
        return next(c for c in opt.allowed(s) if c != default)
    if f.type in (bool, "bool"):
        return "true"
    if s.convert in (int, float):
        return s.example if default is None else str(s.convert(default + 1))
    if s.convert is opt.path:
        return "/srv/elsewhere"
    raise AssertionError(f"no test value for option {name}: add it to TEXT")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    """The app with two configured recognizer servers; the worker is not started (no lifespan),
    so submitted jobs stay queued with the options they were given."""
    base = ParseOptions(inputs=(), server_urls=SERVERS)
    return create_app(
        ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path_factory.mktemp("api") / "data", base=base)
    )


@pytest.fixture(scope="module")
def png(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path: Path = tmp_path_factory.mktemp("doc") / "note.png"
    make_page("Short note", "One page.").save(path)
    return path.read_bytes()


def test_the_declaration_has_request_service_and_cli_only_options() -> None:
    assert {"ocr_runtime", "routing", "ready_timeout", "progress_timeout"} <= set(api_options.FIELDS)
    assert {"layout_model", "api_key", "output", "force", "save_layout_images", "cache_dir"} <= set(
        NOT_REQUEST
    )
    assert "lock_timeout" in api_options.SERVICE_FIELDS and "lock_timeout" in NOT_REQUEST


@pytest.mark.parametrize("name", list(api_options.FIELDS))
def test_each_request_option_reaches_the_job(app: FastAPI, png: bytes, name: str) -> None:
    value = non_default(name)
    expected = getattr(parse_options.from_mapping({name: value}), name)
    assert expected != getattr(app.state.service.config.base, name)  # really a non-default value
    r = TestClient(app).post("/v1/jobs", files={"file": ("note.png", png, "image/png")}, data={name: value})
    assert r.status_code == 202, r.text
    job = app.state.service.store.get(r.json()["id"])
    worker = app.state.service.worker
    # what the job runs with: its stored options plus the secrets this process keeps (a password)
    assert getattr(worker.secrets.restore(job.options, worker.job_options(job)), name) == expected


@pytest.mark.parametrize("name", NOT_REQUEST)
def test_each_other_option_is_refused_by_name(app: FastAPI, png: bytes, name: str) -> None:
    r = TestClient(app).post(
        "/v1/jobs", files={"file": ("note.png", png, "image/png")}, data={name: non_default(name)}
    )
    assert r.status_code == 400, r.text
    assert f"'{name}' cannot be set per request" in r.json()["error"]


@pytest.mark.parametrize("name", api_options.SERVICE_FIELDS)
def test_each_service_option_is_an_api_serve_flag(name: str) -> None:
    f, s = DECLARED[name]
    value = non_default(name)
    flag = [opt.flag_name(f, s)] if f.type in (bool, "bool") else [opt.flag_name(f, s), value]
    args = build_parser().parse_args(["api", "serve", *flag])
    base = api_options.service_defaults(opt.namespace_values(args, ParseOptions, opt.SERVICE))
    expected = getattr(parse_options.from_mapping({name: value}), name)
    assert getattr(base, name) == expected != opt.default_of(f)
