"""The README's HTTP API section against the service's own OpenAPI schema (issue 24 item 8: the
README said ``state`` where the service answers ``status``).

Every backticked route (``GET /v1/jobs/{job_id}``) must be an operation of the schema, every query
parameter it shows (``?status=...&limit=...``) one of that operation's parameters, and every field
of a backticked JSON shape (``{id, status, ...}``) a property of the answer of the route it
follows on that list item (of the error body when it follows none), nested schemas included.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from api.helpers import TESTSERVER
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
ROUTE = re.compile(r"`(GET|POST|DELETE) (/[^`?\s]*)(\?[^`]*)?`")
SHAPE = re.compile(r"`\[?\{([^`]*)\}\]?`")


def api_items(text: str) -> list[str]:
    """The list items of the README's HTTP API list (continuation lines joined)."""
    start = text.index("The HTTP API (checked against")
    body = text[start : text.index("\n\n", text.index("\n- ", start))]
    return [" ".join(item.split()) for item in re.split(r"\n- ", body)[1:]]


def properties(schema: dict, spec: dict, seen: frozenset = frozenset()) -> set[str]:
    """Property names of ``schema`` and of every schema nested in it ($ref, items, anyOf, ...)."""
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref in seen:
            return set()
        return properties(spec["components"]["schemas"][ref.rsplit("/", 1)[1]], spec, seen | {ref})
    names = set(schema.get("properties", {}))
    nested = [*schema.get("properties", {}).values(), *([schema["items"]] if "items" in schema else [])]
    for sub in nested:
        names |= properties(sub, spec, seen)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            names |= properties(sub, spec, seen)
    return names


def answer_fields(operation: dict, spec: dict) -> set[str]:
    """Fields of the operation's 2xx JSON answers."""
    names: set[str] = set()
    for code, response in operation.get("responses", {}).items():
        if code.startswith("2"):
            schema = response.get("content", {}).get("application/json", {}).get("schema", {})
            names |= properties(schema, spec)
    return names


def shape_fields(shape: str) -> set[str]:
    """``id, status, layout: [{type, bbox}]`` -> the field names at every level."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", shape))


def problems(text: str, spec: dict) -> list[str]:
    """What the API section names that the schema does not have."""
    paths = {re.sub(r"\{[^}]*\}", "{}", p): ops for p, ops in spec["paths"].items()}
    error_fields = properties({"$ref": "#/components/schemas/ErrorBody"}, spec)
    out = []
    for item in api_items(text):
        fields: set[str] | None = None
        for piece in re.split(r"(?=`(?:GET|POST|DELETE) /)", item):
            route = ROUTE.match(piece)
            if route:
                method, path, query = route.group(1).lower(), route.group(2), route.group(3) or ""
                op = paths.get(re.sub(r"\{[^}]*\}", "{}", path), {}).get(method)
                if op is None:
                    out.append(f"{method.upper()} {path}: no such operation")
                    continue
                params = {p["name"] for p in op.get("parameters", [])}
                out += [f"{path}: no query parameter {n}" for n in re.findall(r"[?&](\w+)=", query)
                        if n not in params]  # fmt: skip
                fields = answer_fields(op, spec)
            for shape in SHAPE.findall(piece):
                allowed = fields if fields is not None else error_fields
                out += [f"{piece[:40]}...: no field {f!r}" for f in sorted(shape_fields(shape) - allowed)]
    return out


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> dict:
    data = tmp_path_factory.mktemp("api") / "data"
    return create_app(ServiceConfig(allowed_hosts=TESTSERVER, data_dir=data)).openapi()


def test_the_readme_api_section_matches_the_openapi_schema(spec: dict) -> None:
    items = api_items(README)
    assert len(items) >= 6 and sum(len(ROUTE.findall(i)) for i in items) >= 7, items
    assert not problems(README, spec)
    assert "`status`" in README and "`state`" not in README.split("#### One node")[0].split("The HTTP API")[1]


@pytest.mark.parametrize(
    "wrong",
    [
        "- `GET /v1/jobs/{job_id}` is the job to poll: `{id, state, pages_done}`.",
        "- `GET /v1/jobs?state=running` lists them.",
        "- `GET /v1/job/{job_id}` is the job.",
        "- a 401 `{error, remedy}`.",
    ],
)
def test_the_check_catches_a_wrong_name(spec: dict, wrong: str) -> None:
    text = f"The HTTP API (checked against the schema):\n\n{wrong}\n\nafter"
    assert problems(text, spec)
