"""Schemathesis against the app's own OpenAPI schema: no 5xx, every response as documented.

Bounded: ``MAX_EXAMPLES`` generated requests per operation, in-process (ASGI, no network). The
recognizer is the fake OpenAI server (in-process) with ``--layout none``, so accepted jobs are
parsed quickly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from api.helpers import TESTSERVER
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.parsing.options import ParseOptions
from ocrstack.testing.fake_openai import FakeOpenAIServer

MAX_EXAMPLES = 25

pytestmark = [pytest.mark.server]  # the fake OpenAI server of the module fixture
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory):
    with FakeOpenAIServer() as fake:
        base = ParseOptions(inputs=(), layout="none", recognizer="openai", server_urls=(fake.url,))
        data: Path = tmp_path_factory.mktemp("schema") / "data"
        app = create_app(ServiceConfig(allowed_hosts=TESTSERVER, data_dir=data, max_upload_mb=1, base=base))
        with TestClient(app):  # runs the lifespan: worker threads started, stopped at the end
            yield schemathesis.openapi.from_asgi("/openapi.json", app), app


def test_no_5xx_and_responses_match_the_schema(api_schema) -> None:
    schema, app = api_schema
    operations = [result.ok() for result in schema.get_all_operations()]
    labels = {op.label for op in operations}
    assert {"POST /v1/jobs", "POST /v1/parse", "GET /v1/jobs/{job_id}", "DELETE /v1/jobs/{job_id}"} <= labels
    for op in operations:

        @given(case=op.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        def run(case) -> None:
            case.call_and_validate(checks=CHECKS)

        run()
    seen = app.state.service.metrics.requests.collect()[0].samples
    calls = {
        (x.labels["method"], x.labels["route"], x.labels["status"]): x.value
        for x in seen
        if x.name.endswith("_total")
    }
    assert sum(calls.values()) >= 4 * MAX_EXAMPLES  # the generated requests really reached the app
    assert not [k for k in calls if k[2].startswith("5")]
    assert any(route == "/v1/jobs" and status.startswith("4") for _, route, status in calls)
