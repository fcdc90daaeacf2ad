"""The real two-backend check on CPU: tiny MiniCPM-OCR checkpoint in-process vs a real `transformers serve`."""

# ruff: noqa: E501 -- expectations and sample texts kept on one line
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ocrstack.serving.ephemeral import transformers_server
from ocrstack.verifying import tiny
from ocrstack.verifying.backends import OpenAIBackend, TransformersBackend
from ocrstack.verifying.options import VerifyOptions
from ocrstack.verifying.run import run

pytest.importorskip(
    "transformers", reason="the tf extra (torch, transformers) is needed for the two-backend check"
)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("verify")


@pytest.mark.slow
@pytest.mark.server
def test_tiny_inprocess_and_transformers_serve_agree(work: Path) -> None:
    res = run(
        VerifyOptions(tiny=True, work_dir=work, report_dir=work / "report", tf_server=transformers_server)
    )
    status = {c.name: c.status.value for c in res.report.checks}
    assert status["two-backend[0-1]:prompt-tokens"] == "pass", res.to_text()
    assert status["two-backend[0-1]:output"] == "pass", res.to_text()
    assert status["transformers:load-keys"] == "pass"
    assert status["reference-values"] == "not-run"
    assert res.summary[0].startswith(
        "Both backends agree on the TINY RANDOM CPU checkpoint (not the deployed model)"
    )
    assert "TINY RANDOM CPU CHECKPOINT" in res.report.title and "NOT your server" in res.report.title
    a, b = res.results
    assert a.output == b.output and a.generated_tokens == b.generated_tokens > 0
    data = json.loads((work / "report" / "verify-report.json").read_text())
    assert data["ok"] is True


@pytest.mark.slow
@pytest.mark.server
def test_different_weights_are_detected(work: Path) -> None:
    """The check can fail: in-process seed 0 vs a server running the seed-1 checkpoint."""
    other = tiny.tiny_checkpoint(work, seed=1)
    mine = tiny.tiny_checkpoint(work, seed=0)
    sample = tiny.tiny_sample()
    a = TransformersBackend(mine, device="cpu").run(sample, 16)
    with transformers_server(other, work / "serve") as (url, served):
        b = OpenAIBackend(url, served).run(sample, 16)
    assert a.prompt_tokens == b.prompt_tokens  # same tokenizer and processor
    assert a.output != b.output


@pytest.mark.slow
def test_mm_kwargs_reach_the_inprocess_processor(work: Path) -> None:
    """downsample_mode 16x merges more patches than the default 4x: fewer vision tokens in the prompt."""
    from dataclasses import replace

    backend = TransformersBackend(tiny.tiny_checkpoint(work, seed=0), device="cpu")
    sample = tiny.tiny_sample()
    default = backend.run(sample, 1)
    coarse = backend.run(replace(sample, mm_kwargs=(("downsample_mode", "16x"),)), 1)
    assert coarse.vision_tokens < default.vision_tokens
    assert default.prompt_tokens - coarse.prompt_tokens == default.vision_tokens - coarse.vision_tokens
