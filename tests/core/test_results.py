"""Report contract shared by preflight, versions check, toolchain check, fetch and verify."""

from __future__ import annotations

import json

import pytest

from ocrstack.core.errors import CheckFailed, EnvironmentMismatch
from ocrstack.core.results import Check, Report, Status


def sample() -> Report:
    return Report(
        "t",
        [
            Check("a", Status.PASS, "fine"),
            Check("b", Status.NOT_RUN, "no GPU here"),
            Check("c", Status.FAIL, "driver 535", "upgrade the driver to >= 580"),
            Check("d", Status.FAIL, "", "second fix"),
        ],
    )


def test_json_shape_is_pinned() -> None:
    data = json.loads(sample().to_json())
    assert set(data) == {"title", "ok", "counts", "checks"}
    assert data["counts"] == {"pass": 1, "warn": 0, "fail": 2, "not-run": 1}
    assert set(data["checks"][0]) == {"name", "status", "detail", "fix", "expected", "found"}
    assert data["checks"][1]["status"] == "not-run" and data["ok"] is False


def test_not_run_is_never_a_pass() -> None:
    only_not_run = Report("t", [Check("x", Status.NOT_RUN, "skipped")])
    assert only_not_run.ok  # nothing failed ...
    assert only_not_run.counts()["pass"] == 0  # ... but nothing is claimed as passed
    assert "0 passed" in only_not_run.to_text() and "1 not run" in only_not_run.to_text()


def test_raise_if_failed_lists_failures_and_first_fix() -> None:
    with pytest.raises(CheckFailed) as err:
        sample().raise_if_failed("preflight")
    assert "c: driver 535; d" in str(err.value)
    assert err.value.remedy == "upgrade the driver to >= 580"
    with pytest.raises(EnvironmentMismatch):
        sample().raise_if_failed("versions", EnvironmentMismatch)
    Report("ok", [Check("a", Status.PASS)]).raise_if_failed("nothing")  # no raise
