"""Unit tests for ocrstack.toolchain.check: parsers on real tool output, and the report shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.cli import main
from ocrstack.core.errors import CheckFailed
from ocrstack.core.results import Status
from ocrstack.toolchain import check as tc
from ocrstack.toolchain.options import ToolchainOptions

# verbatim `nvcc --version` of the pinned nvidia-cuda-nvcc 13.0.48 wheel (captured on this machine)
NVCC_13_0_48 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Jul_16_07:30:01_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.48
Build cuda_13.0.r13.0/compiler.36260728_0
"""

# excerpt of include/crt/host_config.h from the same wheel (lines 133-139)
HOST_CONFIG_13 = """#if defined(__GNUC__)
#if __GNUC__ > 15
#error -- unsupported GNU version! gcc versions later than 15 are not supported! The nvcc flag \
'-allow-unsupported-compiler' can be used to override this version check
#endif /* __GNUC__ > 15 */
"""


def test_parse_nvcc_version() -> None:
    assert tc.parse_nvcc_version(NVCC_13_0_48) == (13, 0, "13.0.48")
    assert tc.parse_nvcc_version("Cuda compilation tools, release 12.8, V12.8.93") == (12, 8, "12.8.93")
    with pytest.raises(ValueError):
        tc.parse_nvcc_version("bash: nvcc: command not found")


def test_gnu_limit_read_from_host_config() -> None:
    assert tc.max_gnu_major(HOST_CONFIG_13) == 15
    assert tc.max_gnu_major("#if __GNUC__ > 13\n") == 13
    assert tc.max_gnu_major("/* no gcc check */") is None


def test_gcc_major() -> None:
    assert tc.gcc_major("g++ (Debian 12.2.0-14+deb12u1) 12.2.0", "12\n") == 12
    assert tc.gcc_major("x86_64-conda-linux-gnu-c++ (conda-forge gcc 13.3.0-2) 13.3.0", "13.3.0") == 13
    assert tc.gcc_major("Debian clang version 14.0.6", "14.0.6") is None


def test_no_nvcc_fails_and_marks_the_rest_not_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvcc anywhere
    monkeypatch.delenv("CUDA_HOME", raising=False)
    report = tc.check(ToolchainOptions(python="python"))
    by = {c.name: c for c in report.checks}
    assert by["nvcc"].status is Status.FAIL and "CUDA_HOME" in by["nvcc"].fix
    assert [by[n].status for n in ("nvcc-vs-torch", "host-compiler", "cuda_fp16.h")] == [Status.NOT_RUN] * 3
    assert not report.ok


def test_cli_exit_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    assert main(["toolchain", "check"]) == CheckFailed.exit_code
    assert "fix:" in capsys.readouterr().err


def fake_tool(path: Path, stdout: str) -> str:
    path.write_text(f"#!/bin/sh\ncat <<'OUT'\n{stdout}\nOUT\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.proc
def test_gcc_newer_than_nvcc_accepts_fails(tmp_path: Path) -> None:
    home = tmp_path / "cuda"
    (home / "include" / "crt").mkdir(parents=True)
    (home / "include" / "crt" / "host_config.h").write_text(HOST_CONFIG_13)
    gxx16 = fake_tool(tmp_path / "g++-16", "16")  # answers --version and -dumpversion alike
    bad = tc._host_compiler_check(gxx16, home, 13)
    assert bad.status is Status.FAIL and bad.found == "16" and bad.expected == "<= 15"
    assert "g++-13" in bad.fix
    gxx13 = fake_tool(tmp_path / "g++-13", "13")
    assert tc._host_compiler_check(gxx13, home, 13).status is Status.PASS


@pytest.mark.proc
def test_torch_cuda_major_must_match_nvcc(tmp_path: Path) -> None:
    cu126 = fake_tool(tmp_path / "python-cu126", "2.14.0+cu126 12.6")
    check = tc._torch_check(cu126, 13)
    assert check.status is Status.FAIL and check.found == "12.6" and "cu130" in check.fix
    cu130 = fake_tool(tmp_path / "python-cu130", "2.14.0+cu130 13.0")
    assert tc._torch_check(cu130, 13).status is Status.PASS
    cpu = fake_tool(tmp_path / "python-cpu", "2.14.0+cpu cpu")
    assert tc._torch_check(cpu, 13).status is Status.FAIL


def test_ccbin_not_passed_twice_under_conda() -> None:
    assert tc.ccbin_args("g++-13", {}) == ["-ccbin", "g++-13"]
    conda = {"NVCC_PREPEND_FLAGS": " -ccbin=/env/bin/x86_64-conda-linux-gnu-c++"}
    assert tc.ccbin_args("g++-13", conda) == []
    assert tc.ccbin_args("g++-13", {"NVCC_APPEND_FLAGS": "--compiler-bindir /x"}) == []


# head of `nvcc -v --dryrun -x cu -c /dev/null -o /dev/null`, system CUDA 13.0 here (trailing blanks cut)
DRYRUN_13_0 = """#$ _NVVM_BRANCH_=nvvm
#$ _SPACE_=
#$ _CUDART_=cudart
#$ _HERE_=/usr/local/cuda-13.0/bin
#$ _THERE_=/usr/local/cuda-13.0/bin
#$ _TARGET_SIZE_=
#$ _TARGET_DIR_=
#$ _TARGET_DIR_=targets/x86_64-linux
#$ TOP=/usr/local/cuda-13.0/bin/..
#$ CICC_PATH=/usr/local/cuda-13.0/bin/../nvvm/bin
#$ INCLUDES="-I/usr/local/cuda-13.0/bin/../targets/x86_64-linux/include"
#$ SYSTEM_INCLUDES="-isystem" "/usr/local/cuda-13.0/bin/../targets/x86_64-linux/include/cccl"
"""


def test_parse_nvcc_dryrun() -> None:
    layout = tc.parse_nvcc_dryrun(DRYRUN_13_0)
    assert layout.top == Path("/usr/local/cuda-13.0/bin/..")
    assert layout.includes == (Path("/usr/local/cuda-13.0/bin/../targets/x86_64-linux/include"),)
    assert tc.parse_nvcc_dryrun("nvcc fatal   : No input files specified") == tc.NvccLayout(None, ())


def fake_toolkit(root: Path, gnu_limit: int = 15) -> Path:
    """A toolkit dir whose bin/nvcc answers --version and -v --dryrun like the real one."""
    (root / "bin").mkdir(parents=True)
    (root / "include" / "crt").mkdir(parents=True)
    (root / "include" / "crt" / "host_config.h").write_text(HOST_CONFIG_13.replace("15", str(gnu_limit)))
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f"  *--version*) cat <<'OUT'\n{NVCC_13_0_48}OUT\n  ;;\n"
        f'  *--dryrun*) echo "#$ TOP={root}/bin/.." >&2 ;;\n'
        "esac\n"
        "exit 0\n"
    )
    nvcc.chmod(0o755)
    return nvcc


@pytest.mark.proc
def test_wrapper_script_nvcc_resolves_to_the_real_toolkit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/usr/local/bin/nvcc here is `exec /usr/local/cuda-13.0/bin/nvcc "$@"`: CUDA_HOME is not /usr/local."""
    real = fake_toolkit(tmp_path / "cuda-13.0", gnu_limit=14)
    wrapper_dir = tmp_path / "local" / "bin"
    wrapper_dir.mkdir(parents=True)
    wrapper = wrapper_dir / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    gxx = fake_tool(tmp_path / "g++", "13")
    py = fake_tool(tmp_path / "python", "2.14.0+cu130 13.0")
    report = tc.check(ToolchainOptions(python=py, nvcc=str(wrapper), cxx=gxx))
    assert f"CUDA_HOME={(tmp_path / 'cuda-13.0').resolve()})" in report.title
    host = next(c for c in report.checks if c.name == "host-compiler")
    # the limit (14, not the real 15) can only come from the fake toolkit's host_config.h
    assert host.status is Status.PASS and host.expected == "<= 14", host.detail
    assert tc.toolkit_home(str(wrapper)) == (tmp_path / "cuda-13.0").resolve()


@pytest.mark.proc
def test_symlinked_nvcc_needs_no_dryrun(tmp_path: Path) -> None:
    real = fake_toolkit(tmp_path / "cuda")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").symlink_to(real)

    def never(nvcc: str) -> tc.NvccLayout:
        raise AssertionError("nvcc asked although the symlink leads to the toolkit")

    assert tc.toolkit_home(str(tmp_path / "bin" / "nvcc"), ask=never) == (tmp_path / "cuda").resolve()


def test_host_config_found_through_nvcc_includes(tmp_path: Path) -> None:
    """conda-forge layout: headers in targets/x86_64-linux/include, not <TOP>/include."""
    inc = tmp_path / "env" / "targets" / "x86_64-linux" / "include"
    (inc / "crt").mkdir(parents=True)
    (inc / "crt" / "host_config.h").write_text(HOST_CONFIG_13)
    layout = tc.NvccLayout(tmp_path / "env" / "bin" / "..", (inc,))
    found = tc.find_host_config(tmp_path / "env", "nvcc", ask=lambda _: layout)
    assert found == (inc / "crt" / "host_config.h").resolve()
    assert tc.find_host_config(tmp_path / "nowhere", None) is None
