"""``GET /v1/jobs`` (issue 24 item 8): newest first, cursor paging, status and age filters, on
both job stores (SQLite, and PostgreSQL on a private cluster: skipped with the reason without
``initdb``), and through the app with the request checks (400/422 with the fix, 401 naming the
header)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.helpers import TESTSERVER, make_page
from ocrstack.api import listing
from ocrstack.api.app import create_app
from ocrstack.api.config import ServiceConfig
from ocrstack.api.jobquery import JobQuery
from ocrstack.api.store import JobStore
from ocrstack.core.errors import UsageError


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.server)])
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        s = JobStore(tmp_path / "data")
    else:
        from ocrstack.api.postgres import PostgresJobStore

        s = PostgresJobStore(request.getfixturevalue("pg_url"), tmp_path / "data")
    yield s
    s.close()


def add(store, name: str):
    path = store.upload_tmp()
    path.write_bytes(b"%PDF-1.4 x")
    return store.create(upload=path, name=name, filename=name, options={"dpi": 200}, pages_total=2)


def listed(store, **query) -> tuple[list[str], str | None]:
    q = JobQuery(**query)
    jobs, cursor = listing.page(store.jobs(q), q)
    return [j.filename for j in jobs], cursor


def test_newest_first_with_positions_status_and_filters(store) -> None:
    jobs = [add(store, f"{i}.pdf") for i in range(5)]
    assert store.claim().id == jobs[0].id  # 0 running
    store.cancel(jobs[1].id)
    page = store.jobs(JobQuery())
    assert [j.filename for j in page] == ["4.pdf", "3.pdf", "2.pdf", "1.pdf", "0.pdf"]
    assert [(j.state, j.position) for j in page] == [
        ("queued", 2), ("queued", 1), ("queued", 0), ("cancelled", None), ("running", None),
    ]  # fmt: skip
    assert page[0].options == {"dpi": 200} and page[0].webhook is None
    assert listed(store, statuses=("running", "cancelled")) == (["1.pdf", "0.pdf"], None)
    assert listed(store, statuses=("done",)) == ([], None)
    assert listed(store, since=jobs[3].created) == (["4.pdf", "3.pdf"], None)


def test_cursor_pages_through_without_repeats_while_jobs_arrive(store) -> None:
    for i in range(5):
        add(store, f"{i}.pdf")
    first, cursor = listed(store, limit=2)
    assert first == ["4.pdf", "3.pdf"] and cursor
    add(store, "late.pdf")  # submitted while the client pages: no shift, no repeat
    second, cursor = listed(store, limit=2, before=int(cursor))
    third, last = listed(store, limit=2, before=int(cursor))
    assert (second, third, last) == (["2.pdf", "1.pdf"], ["0.pdf"], None)
    assert listed(store, limit=5)[0][0] == "late.pdf"


def test_request_parameters_are_checked() -> None:
    q = listing.query(["queued,running", "done", "queued"], 12.5, "41", 3)
    assert q == JobQuery(statuses=("queued", "running", "done"), since=12.5, before=41, limit=3)
    with pytest.raises(UsageError, match="'finished' is not a job status") as info:
        listing.query(["finished"], None, None, 3)
    assert "done" in info.value.remedy
    with pytest.raises(UsageError, match="cursor") as info:
        listing.query(None, None, "../x", 3)
    assert "next_cursor" in info.value.remedy


def test_the_route_pages_filters_and_refuses_bad_input(tmp_path: Path) -> None:
    app = create_app(ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path / "data"))
    c = TestClient(app)  # no lifespan: no worker, the jobs stay queued
    png = tmp_path / "a.png"
    make_page("A", "one page").save(png)
    ids = [
        c.post("/v1/jobs", files={"file": (f"{i}.png", png.read_bytes(), "image/png")}).json()["id"]
        for i in range(3)
    ]
    body = c.get("/v1/jobs", params={"limit": 2}).json()
    assert [j["id"] for j in body["jobs"]] == ids[::-1][:2] and body["next_cursor"]
    assert body["jobs"][0]["status"] == "queued" and body["jobs"][0]["position"] == 2
    assert body["jobs"][0]["status_url"] == f"/v1/jobs/{ids[2]}"
    rest = c.get("/v1/jobs", params={"limit": 2, "cursor": body["next_cursor"]}).json()
    assert [j["id"] for j in rest["jobs"]] == [ids[0]] and rest["next_cursor"] is None
    assert c.get("/v1/jobs", params={"status": "done"}).json() == {"jobs": [], "next_cursor": None}
    bad = c.get("/v1/jobs", params={"status": "finished"})
    assert bad.status_code == 400 and "queued" in bad.json()["fix"]
    for params in ({"limit": 0}, {"limit": 201}, {"since": "nan"}, {"since": "-1"}):
        r = c.get("/v1/jobs", params=params)
        assert r.status_code == 422 and r.json()["fix"], (params, r.text)


def test_a_missing_key_is_answered_with_the_header_to_send(tmp_path: Path) -> None:
    cfg = ServiceConfig(allowed_hosts=TESTSERVER, data_dir=tmp_path / "data", api_key="k3y")
    c = TestClient(create_app(cfg))
    r = c.get("/v1/jobs")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "X-API-Key" in r.json()["error"] and "--api-key" in r.json()["fix"]
    assert "k3y" not in r.text
    assert c.get("/v1/jobs", headers={"X-API-Key": "k3y"}).status_code == 200
    assert c.get("/v1/jobs", headers={"Authorization": "Bearer k3y"}).status_code == 200
