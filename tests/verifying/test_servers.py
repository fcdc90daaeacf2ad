"""The OpenAI side of the comparison and the DSpark section against a local HTTP server (thread)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ocrstack.core.errors import ServerRejected, ServerUnreachable, UsageError
from ocrstack.verifying.backends import OpenAIBackend, Sample
from ocrstack.verifying.options import VerifyOptions
from ocrstack.verifying.report import write_reports
from ocrstack.verifying.run import run
from ocrstack.verifying.tiny import sample_image_png

METRICS = Path(__file__).resolve().parents[1] / "data" / "metrics"


@pytest.mark.server
def test_openai_request_is_greedy_thinking_off_with_the_same_png(openai_server) -> None:
    url, script = openai_server
    sample = Sample(sample_image_png(), "请识别图中的表格并输出 OTSL", table=True)
    res = OpenAIBackend(url, "minicpm-ocr").run(sample, 512)
    body = script.chats[0]
    assert body["temperature"] == 0 and body["max_tokens"] == 512
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["messages"][0]["content"][0]["image_url"]["url"] == sample.data_url()
    assert body["messages"][0]["content"][1]["text"] == sample.prompt
    assert (res.prompt_tokens, res.output, res.generated_tokens) == (118, "hello", 5)


@pytest.mark.server
def test_openai_4xx_and_unreachable(openai_server) -> None:
    url, script = openai_server
    script.status = 400
    with pytest.raises(ServerRejected):
        OpenAIBackend(url, "m").run(Sample(b"x", "p"), 4)
    with pytest.raises(ServerUnreachable):
        OpenAIBackend("http://127.0.0.1:9", "m", timeout=2).run(Sample(b"x", "p"), 4)


@pytest.mark.server
def test_two_servers_compared_and_disagreement_found(openai_server, tmp_path: Path, monkeypatch) -> None:
    """Two backends are the same fake server; the second answer differs -> the comparison fails."""
    url, script = openai_server
    img = tmp_path / "t.png"
    img.write_bytes(sample_image_png())
    res = run(
        VerifyOptions(image=img, prompt="OCR:", servers=((url, "a"), (url, "b")), report_dir=tmp_path / "rep")
    )
    status = {c.name: c.status.value for c in res.report.checks}
    assert status["two-backend[0-1]:output"] == "pass"
    assert res.summary[0].startswith("Both backends agree")
    data = json.loads((tmp_path / "rep" / "verify-report.json").read_text())
    assert data["summary"] == res.summary and len(data["backends"]) == 2

    # now the second backend's answer differs by one character
    from ocrstack.verifying import backends as b

    real_run = b.OpenAIBackend.run

    def run_then_change(self, sample, max_new):
        out = real_run(self, sample, max_new)
        script.content = "hellp"
        return out

    monkeypatch.setattr(b.OpenAIBackend, "run", run_then_change)
    res = run(VerifyOptions(image=img, prompt="OCR:", servers=((url, "a"), (url, "b"))))
    assert {c.name: c.status.value for c in res.report.checks}["two-backend[0-1]:output"] == "fail"
    assert not res.report.ok and "do not agree" in res.summary[0]


def test_nothing_given_is_a_usage_error_not_a_pass() -> None:
    """A verify that would check nothing must not end as three not-run checks and exit 0 (guide 10)."""
    with pytest.raises(UsageError, match="nothing to check") as err:
        run(VerifyOptions())
    for flag in ("--markdown", "--dspark-url", "--tiny", "--image", "--tf-model", "--server-url"):
        assert flag in err.value.remedy
    with pytest.raises(UsageError, match="--expect / --blocks need --markdown"):
        run(VerifyOptions(expect=("table",)))
    with pytest.raises(UsageError, match="two backends; got an image and 1 backend"):
        run(VerifyOptions(image=Path("t.png"), servers=(("http://127.0.0.1:9", "m"),)))


def test_sections_not_asked_for_are_reported_not_run(tmp_path: Path) -> None:
    md = tmp_path / "out.md"
    md.write_text("<!-- page 1 -->\n\nThe quick brown fox jumps over the lazy dog.\n", encoding="utf-8")
    res = run(VerifyOptions(markdown=md))
    status = {c.name: c.status.value for c in res.report.checks}
    assert status["two-backend"] == "not-run" and status["dspark"] == "not-run"
    assert status["output:non-empty"] == "pass"
    assert any("agreement is not claimed" in s.lower() for s in res.summary)
    path_json, path_txt = write_reports(res, tmp_path)
    assert "NOT RUN" in path_txt.read_text()


@pytest.mark.server
def test_dspark_active_via_metrics(openai_server) -> None:
    url, script = openai_server
    script.metrics_before = (METRICS / "dspark_before.prom").read_text()
    script.metrics_after = (METRICS / "dspark_after.prom").read_text()
    script.switch_after = 3
    res = run(VerifyOptions(dspark_url=url, dspark_model="minicpm-ocr", dspark_requests=3))
    status = {c.name: c.status.value for c in res.report.checks}
    assert status["dspark:spec-decode-counters"] == "pass" and status["dspark:acceptance-length"] == "pass"
    assert len(script.chats) == 3
    assert "DSpark active" in res.summary[1]


@pytest.mark.server
def test_standard_server_is_not_dspark(openai_server) -> None:
    url, script = openai_server
    script.metrics_before = script.metrics_after = (METRICS / "standard_no_spec.prom").read_text()
    res = run(VerifyOptions(dspark_url=url, dspark_requests=1))
    status = {c.name: c.status.value for c in res.report.checks}
    assert status["dspark:spec-decode-counters"] == "fail"
    assert "NOT active" in res.summary[1] and not res.report.ok


def test_dspark_unreachable_is_a_failure_not_a_pass() -> None:
    res = run(VerifyOptions(dspark_url="http://127.0.0.1:9", dspark_requests=1))
    assert {c.name: c.status.value for c in res.report.checks}["dspark"] == "fail"


@pytest.mark.server
def test_mm_processor_kwargs_reach_the_server_only_when_given(openai_server) -> None:
    url, script = openai_server
    OpenAIBackend(url, "m").run(Sample(b"x", "p"), 4)
    assert "mm_processor_kwargs" not in script.chats[-1]  # transformers serve answers 422 to unknown fields
    OpenAIBackend(url, "m").run(Sample(b"x", "p", mm_kwargs=(("downsample_mode", "4x"),)), 4)
    assert script.chats[-1]["mm_processor_kwargs"] == {"downsample_mode": "4x"}


@pytest.mark.server
def test_tiny_run_says_it_compared_the_tiny_checkpoint_not_the_deployed_model(
    openai_server, tmp_path: Path, monkeypatch, capsys
) -> None:
    """`nox -s verify` runs --tiny: title and summary must say the comparison used the tiny random
    checkpoint, not the deployed model or the user's server. The checkpoint build and the
    `transformers serve` start are replaced by the fake server (the real run is the slow test)."""
    import sys
    from contextlib import contextmanager

    from ocrstack.cli import main
    from ocrstack.serving import ephemeral
    from ocrstack.verifying import tiny
    from ocrstack.verifying.backends import BackendResult

    url, script = openai_server

    @contextmanager
    def fake_server(model_dir, run_dir, timeout=0):
        yield url, "tiny-minicpm-ocr"

    class FakeInProcess:
        def __init__(self, *a, **k) -> None:
            pass

        def run(self, sample, max_new):
            return BackendResult(
                "transformers", script.prompt_tokens, script.content, script.completion_tokens
            )

    monkeypatch.setattr(tiny, "tiny_checkpoint", lambda work_dir, seed=0: tmp_path / "tiny")
    monkeypatch.setattr(ephemeral, "transformers_server", fake_server)
    # the module, not the `run` function that ocrstack.verifying re-exports under the same name
    monkeypatch.setattr(sys.modules["ocrstack.verifying.run"], "TransformersBackend", FakeInProcess)
    assert main(["verify", "--tiny", "--work-dir", str(tmp_path), "--report-dir", str(tmp_path / "rep")]) == 0
    text = capsys.readouterr().out
    title, summary = text.splitlines()[0], text.split("Summary:")[1]
    assert "TINY RANDOM CPU CHECKPOINT" in title and "NOT the deployed model, NOT your server" in title
    assert "Both backends agree on the TINY RANDOM CPU checkpoint (not the deployed model)" in summary
    assert "NOT the deployed model and NOT your server" in summary and "--server-url URL" in summary
    data = json.loads((tmp_path / "rep" / "verify-report.json").read_text())
    assert "TINY RANDOM" in data["title"] and data["summary"][0].startswith("Both backends agree on the TINY")

    # the same comparison without --tiny names no tiny checkpoint
    img = tmp_path / "t.png"
    img.write_bytes(sample_image_png())
    res = run(VerifyOptions(image=img, prompt="OCR:", servers=((url, "a"), (url, "b"))))
    assert "TINY" not in res.report.title and "TINY" not in " ".join(res.summary)
