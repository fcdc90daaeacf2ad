"""`ocrstack serve --profile dspark` proves DSpark is active after readiness (guide 6)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ocrstack.backends import profiles
from ocrstack.cli import main
from ocrstack.client import metrics
from ocrstack.core.errors import CheckFailed
from ocrstack.core.results import Check, Report, Status
from ocrstack.serving import runner


def _fake_serve(calls: list):
    def serve(opts, **hooks):
        assert not hooks  # the GPU pick and the log doctor are the serving stage's own (shared tier)
        plan = SimpleNamespace(
            url="http://127.0.0.1:18499",
            served_model="minicpm-ocr",
            port=18499,
            run_dir="/tmp/x",
            log_file="/tmp/x/log",
            profile=profiles.load().get(opts.profile),
        )
        calls.append(("serve", opts.profile))
        return SimpleNamespace(plan=plan, attempts=[SimpleNamespace(extra=(), pid=1, outcome=None)], pid=1)

    return serve


@pytest.mark.parametrize(("profile", "build"), [("dspark", "feat-ocr"), ("dspark-upstream", "upstream")])
@pytest.mark.parametrize(("status", "rc"), [(Status.PASS, 0), (Status.FAIL, CheckFailed.exit_code)])
def test_dspark_profiles_run_the_metrics_proof(
    monkeypatch: pytest.MonkeyPatch, status: Status, rc: int, profile: str, build: str
):
    calls: list = []
    monkeypatch.setattr(runner, "serve", _fake_serve(calls))

    def run_check(url, model):
        calls.append(("check", url, model))
        check = Check("spec-decode-counters", status, "counters", "add --speculative-config")
        return Report("dspark", [check])

    monkeypatch.setattr(metrics, "run_check", run_check)
    assert main(["serve", "--profile", profile, "--build", build]) == rc
    assert calls == [("serve", profile), ("check", "http://127.0.0.1:18499", "minicpm-ocr")]


def test_other_profiles_and_opt_out_skip_the_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list = []
    monkeypatch.setattr(runner, "serve", _fake_serve(calls))
    monkeypatch.setattr(metrics, "run_check", lambda *a: calls.append("check"))
    assert main(["serve", "--profile", "standard", "--build", "feat-ocr"]) == 0
    assert main(["serve", "--profile", "standard-upstream", "--build", "upstream"]) == 0
    assert main(["serve", "--profile", "dspark", "--build", "feat-ocr", "--no-dspark-check"]) == 0
    assert "check" not in calls
