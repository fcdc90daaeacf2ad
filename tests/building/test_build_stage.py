"""Toolchain resolution for the build: --cuda-home > conda-forge prefix > pip wheels; compilers from env."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from ocrstack import versions
from ocrstack.building import stage
from ocrstack.building.options import BuildOptions


def opts(tmp_path: Path, **kw) -> BuildOptions:
    return BuildOptions(src=tmp_path / "v", transformers_src=tmp_path / "t", **kw)


def test_given_cuda_home_wins(tmp_path: Path) -> None:
    tc = stage.resolve_toolchain(opts(tmp_path, cuda_home=tmp_path / "cuda", cxx="g++-13"), env={"PATH": ""})
    assert (tc.kind, tc.cuda_home, tc.cxx, tc.cudahostcxx) == (
        "given",
        str(tmp_path / "cuda"),
        "g++-13",
        "g++-13",
    )


def test_conda_prefix_gives_targets_dir_and_conda_compilers(tmp_path: Path) -> None:
    """PIXI-NOTES: CUDA_HOME = $CONDA_PREFIX/targets/x86_64-linux; CC/CXX exported by the conda compilers."""
    arch = {"aarch64": "sbsa"}.get(platform.machine(), platform.machine())
    targets = tmp_path / "env" / "targets" / f"{arch}-linux"
    (targets / "include").mkdir(parents=True)
    env = {
        "CONDA_PREFIX": str(tmp_path / "env"),
        "CC": "x86_64-conda-linux-gnu-cc",
        "CXX": "x86_64-conda-linux-gnu-c++",
        "PATH": "",
    }
    tc = stage.resolve_toolchain(opts(tmp_path), env=env)
    assert tc.kind == "conda" and tc.cuda_home == str(targets)
    assert (tc.cc, tc.cxx, tc.cudahostcxx) == (
        "x86_64-conda-linux-gnu-cc",
        "x86_64-conda-linux-gnu-c++",
        "x86_64-conda-linux-gnu-c++",
    )


def test_exported_cuda_home_is_honoured(tmp_path: Path) -> None:
    tc = stage.resolve_toolchain(opts(tmp_path), env={"PATH": "", "CUDA_HOME": "/usr/local/cuda-13.0"})
    assert (tc.kind, tc.cuda_home) == ("env", "/usr/local/cuda-13.0")


def test_gcc13_preferred_when_on_path(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name in ("gcc-13", "g++-13"):
        (bin_ / name).write_text("#!/bin/sh\n")
        (bin_ / name).chmod(0o755)
    tc = stage.resolve_toolchain(opts(tmp_path, cuda_home=tmp_path), env={"PATH": str(bin_)})
    assert (tc.cc, tc.cxx) == ("gcc-13", "g++-13")  # guide 3.2: CC=gcc-13 CXX=g++-13 CUDAHOSTCXX=g++-13
    tc = stage.resolve_toolchain(opts(tmp_path, cuda_home=tmp_path), env={"PATH": str(tmp_path / "empty")})
    assert (tc.cc, tc.cxx) == ("gcc", "g++")


@pytest.mark.proc
def test_pip_kind_points_at_the_targets_site_packages(tmp_path: Path) -> None:
    import sysconfig

    tc = stage.resolve_toolchain(opts(tmp_path, python=Path(sys.executable)), env={"PATH": ""})
    assert tc.kind == "pip"
    major = versions.pin("torch.cuda_major")
    assert tc.cuda_home == str(Path(sysconfig.get_paths()["purelib"]) / "nvidia" / f"cu{major}")
