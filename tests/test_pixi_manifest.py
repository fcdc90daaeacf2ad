"""pixi.toml checks that stand in for a pixi binary (issue 2, item 4)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tomllib

from ocrstack.cli import subcommands
from support import manifest

DESIGN_ENVS = {
    # design card: sdk, vllm-build, tf, merged take gcc-13, CUDA 13 and Python 3.13 from conda-forge
    "sdk": {"cuda-toolchain", "sdk"},
    "vllm-build": {"cuda-toolchain", "vllm-build"},
    "tf": {"cuda-toolchain", "tf"},
    "merged": {"cuda-toolchain", "vllm-build", "merged"},
    "vllm": {"vllm"},
}
TOOLCHAIN = {
    "gcc_linux-64",
    "gxx_linux-64",
    "cuda-version",
    "cuda-nvcc",
    "cuda-cccl",
    "cuda-nvrtc-dev",
    "cuda-cudart-dev",
    "libnvjitlink-dev",
    "cmake",
    "ninja",
    "ccache",
    "rust",
    "python",
}


@pytest.fixture(scope="module")
def pixi(repo: Path) -> dict:
    return manifest.load(repo / "pixi.toml")


@pytest.fixture(scope="module")
def schema(shared: Path) -> Path:
    return shared / "pixi-schema" / "schema.json"


def test_manifest_matches_official_schema(pixi: dict, schema: Path) -> None:
    assert manifest.schema_errors(pixi, schema) == []


def test_schema_rejects_pixis_invalid_examples(schema: Path) -> None:
    invalid = sorted((schema.parent / "examples" / "invalid").glob("*.toml"))
    assert len(invalid) >= 10
    for path in invalid:
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError:
            continue  # not even TOML: rejected before the schema
        assert manifest.schema_errors(data, schema), f"{path.name} should be rejected"


def test_schema_check_catches_a_deliberate_error(repo: Path, schema: Path, tmp_path: Path) -> None:
    """A copy of our pixi.toml with the deprecated-and-wrong shapes must fail validation."""
    copy = tmp_path / "pixi.toml"
    shutil.copy(repo / "pixi.toml", copy)
    text = copy.read_text().replace('channels = ["conda-forge"]', 'channels = "conda-forge"', 1)
    text = text.replace('default-environment = "vllm-build"', 'default-environment = "Not_An_Env"', 1)
    copy.write_text(text)
    errors = manifest.schema_errors(manifest.load(copy), schema)
    assert any("channels" in e for e in errors), errors
    assert any("default-environment" in e for e in errors), errors


def test_design_card_environments_and_features(pixi: dict) -> None:
    envs = manifest.environments(pixi)
    for env, feats in DESIGN_ENVS.items():
        assert feats <= set(envs[env]), (env, envs[env])
    tool = manifest.features(pixi)["cuda-toolchain"]
    assert TOOLCHAIN <= set(tool["dependencies"])
    assert tool["activation"]["env"]["CUDA_HOME"] == "$CONDA_PREFIX/targets/x86_64-linux"
    # CUDA as a platform entry, not the deprecated [system-requirements] (pixi >= 0.71)
    assert "system-requirements" not in pixi
    assert any(isinstance(p, dict) and p.get("cuda") for p in pixi["workspace"]["platforms"])


def test_sdk_never_shares_an_environment_with_torch_or_vllm(pixi: dict) -> None:
    """guide 1: sdk-env cannot hold torch / vLLM (numpy, opencv conflicts)."""
    feats = manifest.features(pixi)
    for feat in manifest.environments(pixi)["sdk"]:
        deps = set(feats[feat].get("pypi-dependencies", {})) | set(feats[feat].get("dependencies", {}))
        assert not deps & {"torch", "vllm", "pytorch"}, feat


def test_every_task_calls_an_existing_subcommand(pixi: dict) -> None:
    verbs = subcommands()
    seen = 0
    for _, name, task in manifest.tasks(pixi):
        if "cmd" not in task:
            continue  # pure alias of depends-on
        words = manifest.task_verbs(task["cmd"])
        assert words, f"task {name}: command must be `ocrstack <verb>`: {task['cmd']!r}"
        assert any(" ".join(words[:n]) in verbs for n in range(len(words), 0, -1)), (name, words)
        assert task.get("description"), f"task {name} needs a description"
        seen += 1
    assert seen >= 2


def test_references_resolve(pixi: dict) -> None:
    assert manifest.reference_errors(pixi) == []


def test_reference_check_catches_dangling_names(pixi: dict) -> None:
    broken = {
        **pixi,
        "tasks": {
            **pixi["tasks"],
            "x": {"cmd": "ocrstack versions show", "depends-on": ["nope"], "default-environment": "ghost"},
        },
    }
    errs = manifest.reference_errors(broken)
    assert any("nope" in e for e in errs) and any("ghost" in e for e in errs)


def test_pins_equal_versions_yaml(pixi: dict) -> None:
    assert manifest.pin_mismatches(pixi) == []


def test_pin_check_catches_drift(pixi: dict) -> None:
    feat = pixi["feature"]["vllm-build"]["pypi-dependencies"]
    drifted = {
        **pixi,
        "feature": {
            **pixi["feature"],
            "vllm-build": {
                "pypi-dependencies": {
                    **feat,
                    "torch": {"version": "==2.13.0", "index": feat["torch"]["index"]},
                    "cmake-x": "==1",
                }
            },
        },
    }
    errs = manifest.pin_mismatches(drifted)
    assert any("torch" in e for e in errs) and any("cmake-x" in e for e in errs)


@pytest.mark.parametrize(
    ("cmd", "verbs"),
    [
        ("ocrstack versions check --env {{ env }}", ["versions", "check"]),
        ('cd "$INIT_CWD" && ocrstack parse {{ input }}', ["parse"]),
        ("python -c 'import x'", []),
        ("rm -rf / && ocrstack parse", []),
    ],
)
def test_task_verbs(cmd: str, verbs: list[str]) -> None:
    assert manifest.task_verbs(cmd) == verbs


REQUIRED_TASKS = {
    # issue 2 item 3: task -> the environment it must default to
    "preflight": "default", "fetch-models": "default", "fetch-layout": "default",
    "build-vllm": "vllm-build", "install-transformers-fork": "vllm-build", "versions-check": "vllm-build",
    "serve-dspark": "vllm-build", "serve-standard": "vllm-build", "serve-tf": "tf", "wait-ready": "default",
    "parse": "sdk", "verify": "merged", "doctor": "default", "lock-export": "default",
}  # fmt: skip


def test_required_tasks_and_their_wiring(pixi: dict) -> None:
    found = {name: task for _, name, task in manifest.tasks(pixi)}
    for name, env in REQUIRED_TASKS.items():
        assert name in found, f"missing task {name}"
        assert found[name].get("default-environment") == env, name
    # guide 3.2: the transformers fork goes in after vLLM, never before
    deps = found["install-transformers-fork"]["depends-on"]
    assert [d["task"] if isinstance(d, dict) else d for d in deps] == ["build-vllm"]
    # the vLLM build is cached on its sources and produces the extension (guide 3.2)
    assert found["build-vllm"]["inputs"] and found["build-vllm"]["outputs"] == [
        "{{ src }}/vllm/_C_stable_libtorch.abi3.so"
    ]
    # `pixi run -e sdk parse doc.pdf`: one typed positional argument, run in the caller's directory
    assert found["parse"]["args"] == ["input"] and "$INIT_CWD" in found["parse"]["cmd"]


def test_versions_check_knows_every_pixi_environment(pixi: dict) -> None:
    """`versions-check` runs `--env {{ pixi.environment.name }}`: each environment needs pins."""
    from ocrstack import versions

    task = next(t for _, n, t in manifest.tasks(pixi) if n == "versions-check")
    assert "{{ pixi.environment.name }}" in task["cmd"]
    for env in manifest.environments(pixi):
        versions.expectations(env)  # raises ConfigError for an environment without pins
