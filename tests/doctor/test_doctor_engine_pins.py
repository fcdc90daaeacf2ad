"""Doctor rule for the vLLM 0.33.0 vs transformers pin conflict (issue 14), on pip's real wording."""

from __future__ import annotations

from ocrstack.doctor.engine import diagnose

PIP_RESOLVER = (
    "ERROR: pip's dependency resolver does not currently take into account all the packages that are "
    "installed. This behaviour is the source of the following dependency conflicts.\n"
    "vllm 0.33.0 requires transformers<5.21.0,>=5.16.1, but you have transformers 5.23.0 "
    "which is incompatible.\n"
)
PIP_CHECK = "vllm 0.33.0 has requirement transformers<5.21.0,>=5.16.1, but you have transformers 5.21.0.\n"


def test_expected_conflict_is_explained() -> None:
    for text in (PIP_RESOLVER, PIP_CHECK):
        found = [f for f in diagnose(text, stages=["build"]) if f.rule_id == "vllm-transformers-pin-conflict"]
        assert found, text
        assert "--no-deps" in found[0].cause and "minicpm_ocr" in found[0].cause


def test_old_transformers_is_not_called_expected() -> None:
    """transformers below 5.21 under vLLM is the real failure (no minicpm_ocr), not this rule."""
    text = (
        "vllm 0.33.0 requires transformers<5.21.0,>=5.16.1, but you have transformers 5.15.0 "
        "which is incompatible."
    )
    assert not [f for f in diagnose(text) if f.rule_id == "vllm-transformers-pin-conflict"]
