"""The vLLM source-build plan and the prebuilt plan: order, pins, environment, done-checks, dry-run output."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ocrstack.building import plan as bp
from ocrstack.building import steps
from ocrstack.building.options import BuildOptions, PrebuiltOptions
from ocrstack.building.runner import condition_holds
from ocrstack.building.sources import Patch
from ocrstack.cli import main
from ocrstack.core.errors import UsageError

PIP = steps.Toolchain("pip", "/env/lib/python3.13/site-packages/nvidia/cu13", "gcc-13", "g++-13", "g++-13")
CONDA = steps.Toolchain("conda", "/pixi/envs/vllm-build/targets/x86_64-linux", "cc", "c++", "c++")


@pytest.fixture
def pins(repo: Path) -> dict:
    """The raw versions.yaml, read independently of ocrstack.versions."""
    return yaml.safe_load((repo / "envs" / "versions.yaml").read_text())


def opts(tmp_path: Path, **kw) -> BuildOptions:
    base = {
        "src": tmp_path / "vllm",
        "transformers_src": tmp_path / "transformers",
        "python": Path("/env/bin/python"),
        "patches_dir": tmp_path / "no-patches",
    }
    base.update(kw)
    return BuildOptions(**base)


def test_order_is_the_guides(tmp_path: Path) -> None:
    p = bp.vllm_plan(opts(tmp_path), PIP, 8)
    assert p.names() == [
        "torch",
        "transformers-build-range",
        "build-tools",
        "pip-cuda-wheels",
        "fix-pip-cuda",
        "toolchain-check",
        "compile-vllm",
        "transformers-fork",
        "versions-check",
        "import-vllm",
        "extension-file",
    ]


def test_conda_toolchain_skips_pip_wheels(tmp_path: Path) -> None:
    names = bp.vllm_plan(opts(tmp_path), CONDA, 8).names()
    assert "pip-cuda-wheels" not in names and "fix-pip-cuda" not in names
    # the invariant that matters most: the fork only after the compile (guide 3.2, guide 8)
    assert names.index("compile-vllm") < names.index("transformers-fork") < names.index("versions-check")


def test_pins_come_from_versions_yaml(tmp_path: Path, pins: dict) -> None:
    p = bp.vllm_plan(opts(tmp_path), PIP, 8)
    torch = p.step("torch").argv
    t = pins["torch"]
    for name in ("torch", "torchaudio", "torchvision"):
        assert f"{name}=={t[name]}" in torch
    assert torch[torch.index("--index-url") + 1] == t["index"]
    assert {c.value for c in p.step("torch").done.dists} == {
        f"=={t[n]}{t['local']}" for n in ("torch", "torchaudio", "torchvision")
    }
    assert p.step("transformers-build-range").argv[-1] == "transformers" + pins["transformers"]["build-range"]
    assert list(p.step("build-tools").argv[4:]) == pins["build-tools"]
    wheels = p.step("pip-cuda-wheels").argv[4:]
    assert list(wheels) == [f"{k}=={v}" for k, v in pins["pip-cuda-toolchain"].items()]


def test_compile_and_fork_commands(tmp_path: Path, pins: dict) -> None:
    p = bp.vllm_plan(opts(tmp_path), PIP, 6)
    compile_ = p.step("compile-vllm")
    assert compile_.argv[1:] == (
        "-m",
        "pip",
        "install",
        "-e",
        str(tmp_path / "vllm"),
        "--no-build-isolation",
        "--progress-bar",
        "off",
    )
    assert compile_.env["MAX_JOBS"] == "6"
    assert compile_.env["CUDA_HOME"] == PIP.cuda_home
    assert (compile_.env["CC"], compile_.env["CXX"], compile_.env["CUDAHOSTCXX"]) == (
        "gcc-13",
        "g++-13",
        "g++-13",
    )
    # guide 3.2: PATH="$VIRTUAL_ENV/bin:$CU/bin:$PATH"
    assert compile_.path_prepend == ("/env/bin", f"{PIP.cuda_home}/bin")
    assert compile_.cwd == str(tmp_path / "vllm")
    assert compile_.done.files == (str(tmp_path / "vllm" / "vllm" / pins["vllm"]["extension"]),)
    assert compile_.done.dists[0].value == pins["vllm"]["fork-commit"][:9]
    fork = p.step("transformers-fork")
    assert fork.argv[1:] == ("-m", "pip", "install", "--no-deps", "-e", str(tmp_path / "transformers"))
    assert fork.done.dists[0].value == "==" + pins["transformers"]["fork-version"]
    assert p.step("versions-check").argv[1:] == ("-m", "ocrstack.building.assertions", "--env", "vllm-build")
    assert p.step("versions-check").argv[0] == "/env/bin/python"  # runs in the target environment
    assert p.step("toolchain-check").argv[4:8] == ("check", "--python", "/env/bin/python", "--cxx")
    assert "from vllm import LLM" in p.step("import-vllm").argv[-1]
    assert p.step("extension-file").argv[-1] == pins["vllm"]["extension"]
    assert not any("vllm._C" in a and "stable" not in a for s in p.steps for a in s.argv)


def test_build_range_done_check_keeps_the_fork(pins: dict, tmp_path: Path) -> None:
    """On a rerun the fork (5.19.0.dev0) satisfies the build range: step 2 is skipped, the fork survives."""
    cond = bp.vllm_plan(opts(tmp_path), PIP, 1).step("transformers-build-range").done.dists[0]
    assert condition_holds(cond, pins["transformers"]["fork-version"])
    assert not condition_holds(cond, "5.20.1")
    assert not condition_holds(cond, None)


def test_without_deps_no_offline_variables(tmp_path: Path) -> None:
    env = bp.vllm_plan(opts(tmp_path), PIP, 4).step("compile-vllm").env
    assert not any(k.endswith("_SRC_DIR") for k in env) and "CMAKE_ARGS" not in env
    pre = " ".join(bp.vllm_plan(opts(tmp_path), PIP, 4).preflight)
    assert "github.com:443 reachable" in pre


def test_offline_variables(tmp_path: Path) -> None:
    deps = tmp_path / "old-vllm" / ".deps"
    env = bp.vllm_plan(opts(tmp_path, deps=deps), PIP, 4).step("compile-vllm").env
    assert env["TRITON_KERNELS_SRC_DIR"] == str(
        deps / "triton_kernels-src/python/triton_kernels/triton_kernels"
    )
    assert env["VLLM_CUTLASS_SRC_DIR"] == str(deps / "cutlass-src")
    assert env["CMAKE_ARGS"] == "-DCUTLASS_ENABLE_TESTS=OFF"
    assert len([k for k in env if k.endswith("_SRC_DIR")]) == 10


def test_ccache_dir_only_when_ccache_present(tmp_path: Path) -> None:
    o = opts(tmp_path, ccache_dir=tmp_path / "ccache")
    assert bp.vllm_plan(o, PIP, 4, ccache="/usr/bin/ccache").step("compile-vllm").env["CCACHE_DIR"] == str(
        tmp_path / "ccache"
    )
    assert "CCACHE_DIR" not in bp.vllm_plan(o, PIP, 4, ccache=None).step("compile-vllm").env
    assert any("ccache not found" in n for n in bp.vllm_plan(o, PIP, 4, ccache=None).notes)


def test_patches_all_checked_before_any_applied(tmp_path: Path) -> None:
    patches = [
        Patch("vllm", tmp_path / "a.patch"),
        Patch("vllm", tmp_path / "b.patch"),
        Patch("transformers", tmp_path / "c.patch"),
    ]
    p = bp.vllm_plan(opts(tmp_path), PIP, 4, patches=patches)
    names = p.names()
    checks = [i for i, n in enumerate(names) if n.startswith("patch-check:")]
    applies = [i for i, n in enumerate(names) if n.startswith("patch-apply:")]
    assert len(checks) == len(applies) == 3
    assert max(checks) < min(applies) and max(applies) < names.index("compile-vllm")
    c = p.step("patch-check:transformers/c.patch")
    assert c.argv == (
        "git",
        "-C",
        str(tmp_path / "transformers"),
        "apply",
        "--check",
        str(tmp_path / "c.patch"),
    )
    assert "--reverse" in p.step("patch-apply:vllm/a.patch").done.command


def test_plan_is_pure(tmp_path: Path) -> None:
    """Building the plan touches nothing: the source dirs need not exist (and are not created)."""
    bp.vllm_plan(opts(tmp_path, deps=tmp_path / "deps"), PIP, 4)
    assert list(tmp_path.iterdir()) == []


def test_prebuilt_plan(pins: dict) -> None:
    p = bp.prebuilt_plan(PrebuiltOptions(python=Path("/env/bin/python")))
    assert p.names() == ["vllm-wheel", "transformers-override", "pip-check", "versions-check", "import-vllm"]
    up = pins["upstream"]
    assert p.step("vllm-wheel").argv[-1] == f"vllm=={up['vllm']}"
    assert p.step("transformers-override").argv[4:] == ("--no-deps", f"transformers{up['transformers']}")
    assert p.step("pip-check").argv[-2:] == ("--allow", "transformers")
    assert p.step("versions-check").argv[-1] == "vllm"


@pytest.mark.proc  # the dry-run reads the checkouts' commits with git
def test_dry_run_cli_prints_the_full_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_target, pinned_repos
) -> None:
    fake_target()
    rc = main(
        [
            "build",
            "vllm",
            "--src",
            str(pinned_repos["vllm"]),
            "--transformers-src",
            str(pinned_repos["transformers"]),
            "--cuda-home",
            str(tmp_path / "cuda"),
            "--max-jobs",
            "3",
            "--deps",
            str(tmp_path / "deps"),
            "--patches-dir",
            str(tmp_path / "none"),
            "--dry-run",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    numbered = [
        ln.split(":")[0].split(".", 1)[1].strip() for ln in lines if ln[:4].strip().rstrip(".").isdigit()
    ]
    assert numbered == [
        "torch",
        "transformers-build-range",
        "build-tools",
        "toolchain-check",
        "compile-vllm",
        "transformers-fork",
        "versions-check",
        "import-vllm",
        "extension-file",
    ]
    assert "env  MAX_JOBS=3" in out
    assert (
        f"env  TRITON_KERNELS_SRC_DIR={tmp_path}/deps/triton_kernels-src/python/triton_kernels/triton_kernels"
        in out
    )
    assert "--no-build-isolation" in out and "--no-deps -e" in out
    assert f"every *_SRC_DIR under {tmp_path}/deps exists" in out
    assert [p.name for p in tmp_path.iterdir()] == ["src"]  # nothing written besides the test's repos


def test_dry_run_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_target) -> None:
    import json

    fake_target()

    main(["build", "vllm-prebuilt", "--python", "/env/bin/python", "--dry-run", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in data["steps"]][:2] == ["vllm-wheel", "transformers-override"]


def test_bad_max_jobs_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["build", "vllm", "--src", "v", "--transformers-src", "t", "--max-jobs", "0", "--dry-run"])
    assert rc == 2 and "--max-jobs" in capsys.readouterr().err


@pytest.mark.proc  # the dry-run reads the checkouts' commits with git
def test_slices_for_cached_pixi_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_target, pinned_repos
) -> None:
    fake_target()
    p = bp.vllm_plan(opts(tmp_path), CONDA, 4)
    assert p.slice(None, "compile-vllm").names()[-1] == "compile-vllm"
    assert p.slice("transformers-fork").names() == [
        "transformers-fork",
        "versions-check",
        "import-vllm",
        "extension-file",
    ]
    assert p.slice().names() == p.names()
    with pytest.raises(UsageError, match="transformers-fork"):
        p.slice("no-such-step")
    with pytest.raises(UsageError):
        p.slice("transformers-fork", "torch")
    rc = main(
        [
            "build",
            "vllm",
            "--src",
            str(pinned_repos["vllm"]),
            "--transformers-src",
            str(pinned_repos["transformers"]),
            "--cuda-home",
            str(tmp_path),
            "--from",
            "transformers-fork",
            "--dry-run",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "  1. transformers-fork:" in out and "compile-vllm" not in out
