"""preflight's deployment-kit checks (issue 14): engine vs transformers pins, draft release, served name."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from ocrstack import versions
from ocrstack.backends import profiles as serve_profiles
from ocrstack.core import paths
from ocrstack.core.results import Status
from ocrstack.preflight import deployment
from ocrstack.preflight.facts import PythonEnv

UP = versions.pin("upstream")


@pytest.fixture(scope="module")
def data() -> tuple[dict, dict[str, serve_profiles.Profile]]:
    catalog = paths.read_yaml(paths.data_file("models.yaml"), "models")["models"]
    return catalog, dict(serve_profiles.load().profiles)


def _env(transformers: str | None) -> PythonEnv:
    return PythonEnv("vllm", "/e/bin/python", "3.13.9", vllm="0.33.0", transformers=transformers)


def test_pins_explain_the_transformers_trap() -> None:
    c = deployment.check_engine_transformers(
        UP["vllm"], UP["vllm-transformers-pin"], UP["transformers"], None
    )
    assert c.status is Status.WARN and "--no-deps" in c.detail and "<5.21" in c.detail
    # a pin that excludes the first minicpm_ocr release is a failure
    c = deployment.check_engine_transformers("0.33.0", "<5.21", "<5.21", None)
    assert c.status is Status.FAIL and "5.21.0" in c.detail


def test_vllm_env_with_vllms_own_transformers_fails() -> None:
    """pip resolved transformers inside vLLM's pin (5.20.x): minicpm_ocr is unknown there."""
    c = deployment.check_engine_transformers("0.33.0", "<5.21", ">=5.21", _env("5.20.2"))
    assert c.status is Status.FAIL and c.found == "5.20.2" and "--no-deps" in c.fix
    ok = deployment.check_engine_transformers("0.33.0", "<5.21", ">=5.21", _env("5.21.1"))
    assert ok.status is Status.WARN and "as intended" in ok.detail


def test_draft_and_main_from_one_release(data) -> None:
    catalog, profiles = data
    assert deployment.check_draft_release(catalog, profiles).status is Status.PASS
    dspark = profiles["dspark"]
    mixed = {
        **profiles,
        "dspark": dataclasses.replace(dspark, vars={**dspark.vars, "model": "./models/Other-OCR-2.0"}),
    }
    c = deployment.check_draft_release(catalog, mixed)
    assert c.status is Status.FAIL and "profile dspark" in c.detail and "Other-OCR-2.0" in c.detail
    orphan = copy.deepcopy(catalog)
    orphan["MiniCPM-OCR-1.0-DSpark"]["main"] = "MiniCPM-OCR-0.9"
    assert "MiniCPM-OCR-0.9" in deployment.check_draft_release(orphan, profiles).detail


def test_served_name_agreement(data) -> None:
    _, profiles = data
    default = str(versions.pin("serve.served-model-name"))
    pins = {"served_model_name": default, "port": "1"}
    c = deployment.check_served_names(profiles, default, pins)
    assert c.status is Status.WARN and "tf (parse --model ./models/MiniCPM-OCR-1.0)" in c.detail
    assert "dspark" not in c.detail.split("another name")[1]
    # a profile whose flag differs from its served-name is a failure
    standard = profiles["standard"]
    args = list(standard.args)
    args[1] = ("--served-model-name", "minicpm-ocr-v2")
    broken = {**profiles, "standard": dataclasses.replace(standard, args=tuple(args))}
    c = deployment.check_served_names(broken, default, pins)
    assert c.status is Status.FAIL and "standard: --served-model-name minicpm-ocr-v2" in c.detail
    # parse's default name changed but the profiles keep theirs: every vLLM profile is reported
    c = deployment.check_served_names(profiles, "other-name", pins)
    assert "dspark (parse --model minicpm-ocr)" in c.detail
