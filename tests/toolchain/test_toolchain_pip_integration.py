"""Integration: the pip-wheel CUDA 13 toolchain compiles and links after `fix-pip-cuda` (guide 3.2).

Runs in CI without a GPU: a fresh venv gets the seven pinned nvidia-* wheels from
envs/versions.yaml, `ocrstack toolchain fix-pip-cuda` repairs the layout (twice: the
second run must change nothing), then

* a `.cu` that includes cuda_fp16.h and calls the runtime is compiled, linked and run,
* a host program is linked against nvrtc and compiles a kernel to PTX at run time,
* a CMake project using `find_package(CUDAToolkit)` (cudart, nvrtc, cuda_driver via the
  generated libcuda stub, and a CUDA-language target) configures and builds.

This machine may also have a system CUDA (/usr/local/cuda, nvcc wrappers in
/usr/local/bin, an ld.so.conf entry), so every command runs with a clean environment
(PATH without those), `command -v nvcc` is asserted to be the pip one, and programs run
with LD_LIBRARY_PATH at the pip libs; `ldd` proves which libraries were loaded. Without a
GPU `cudaGetDeviceCount` returns an error code (35, insufficient driver): fine, it ran.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ocrstack import versions

from .test_toolchain_pipcuda import snapshot

pytestmark = [pytest.mark.network, pytest.mark.slow]

KERNEL_CU = r"""
#include <cstdio>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
__global__ void add_one(__half *x) { x[threadIdx.x] = __hadd(x[threadIdx.x], __float2half(1.0f)); }
int main() {
  int n = -1, rt = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  cudaRuntimeGetVersion(&rt);
  printf("runtime=%d err=%d (%s) count=%d\n", rt, (int)err, cudaGetErrorName(err), n);
  return 0;
}
"""

NVRTC_CPP = r"""
#include <cstdio>
#include <nvrtc.h>
int main() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  const char *src = "extern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }";
  nvrtcProgram prog;
  nvrtcCreateProgram(&prog, src, "k.cu", 0, nullptr, nullptr);
  const char *opts[] = {"--gpu-architecture=compute_80"};
  nvrtcResult c = nvrtcCompileProgram(prog, 1, opts);
  size_t ptx = 0;
  nvrtcGetPTXSize(prog, &ptx);
  printf("nvrtc=%d.%d compile=%d ptx=%zu\n", major, minor, (int)c, ptx);
  return c == NVRTC_SUCCESS ? 0 : 1;
}
"""

RT_CPP = r"""
#include <cstdio>
#include <cuda_runtime.h>
int main() {
  int n = -1;
  cudaError_t e = cudaGetDeviceCount(&n);
  printf("err=%d count=%d\n", (int)e, n);
  return 0;
}
"""

DRV_CPP = r"""
#include <cstdio>
#include <cuda.h>
int main() {
  int v = 0;
  CUresult r = cuDriverGetVersion(&v);
  printf("driver=%d rc=%d\n", v, (int)r);
  return 0;
}
"""

CMAKELISTS = r"""
cmake_minimum_required(VERSION 3.24)
project(pipcuda LANGUAGES CXX CUDA)
find_package(CUDAToolkit REQUIRED)
message(STATUS "OCRSTACK nvcc=${CUDAToolkit_NVCC_EXECUTABLE} version=${CUDAToolkit_VERSION}")
message(STATUS "OCRSTACK libdir=${CUDAToolkit_LIBRARY_DIR} driver=${CUDA_cuda_driver_LIBRARY}")
add_executable(rt rt.cpp)
target_link_libraries(rt PRIVATE CUDA::cudart)
add_executable(rtc nvrtc.cpp)
target_link_libraries(rtc PRIVATE CUDA::nvrtc)
add_executable(drv drv.cpp)
target_link_libraries(drv PRIVATE CUDA::cuda_driver)
add_executable(kern kernel.cu)
set_target_properties(kern PROPERTIES CUDA_ARCHITECTURES 80 CUDA_RUNTIME_LIBRARY Shared)
"""


def run(
    argv: list[str], env: dict[str, str], cwd: Path | None = None, check: bool = True, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def cmake_version(cmake: str) -> tuple[int, ...]:
    out = subprocess.run([cmake, "--version"], capture_output=True, text=True, check=True).stdout
    return tuple(int(x) for x in re.search(r"(\d+)\.(\d+)", out).groups())


@pytest.fixture(scope="module")
def pip_toolchain(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A fresh venv with the seven pinned nvidia-* wheels, before any fix-up."""
    base = tmp_path_factory.mktemp("pipcuda")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)], env=dict(os.environ))
    py = venv / "bin" / "python"
    pins = versions.pin("pip-cuda-toolchain")
    specs = [f"{name}=={ver}" for name, ver in pins.items()]
    assert len(specs) == 7
    run([str(py), "-m", "pip", "install", "--disable-pip-version-check", *specs], env=dict(os.environ))
    major = versions.pin("torch.cuda_major")
    site = run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env=dict(os.environ)
    )
    cu = Path(site.stdout.strip()) / "nvidia" / f"cu{major}"
    assert (cu / "bin" / "nvcc").is_file()
    # clean environment: no /usr/local/cuda, no /usr/local/bin nvcc wrappers, no inherited CUDA vars
    clean = {
        "PATH": os.pathsep.join([str(cu / "bin"), str(venv / "bin"), "/usr/bin", "/bin"]),
        "HOME": os.environ.get("HOME", str(base)),
        "LANG": "C.UTF-8",
        "TMPDIR": str(base),
    }
    for keep in (
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_FIND_LINKS",
        "PIP_CERT",
        "SSL_CERT_FILE",
        "HTTPS_PROXY",
        "https_proxy",
        "NO_PROXY",
        "no_proxy",
        "PIP_DEFAULT_TIMEOUT",
    ):
        if keep in os.environ:
            clean[keep] = os.environ[keep]
    return {"base": base, "venv": venv, "py": py, "cu": cu, "env": clean}


def ocrstack_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # this interpreter runs ocrstack; PYTHONPATH is not needed for an editable install
    return run([sys.executable, "-m", "ocrstack", *args], env=env, check=False)


def test_pip_toolchain_compiles_and_links_after_fix(pip_toolchain: dict) -> None:
    cu: Path = pip_toolchain["cu"]
    env: dict[str, str] = pip_toolchain["env"]
    work: Path = pip_toolchain["base"] / "work"
    work.mkdir()
    (work / "kernel.cu").write_text(KERNEL_CU)
    (work / "nvrtc.cpp").write_text(NVRTC_CPP)
    (work / "rt.cpp").write_text(RT_CPP)
    (work / "drv.cpp").write_text(DRV_CPP)

    which = run(["bash", "-c", "command -v nvcc"], env=env).stdout.strip()
    assert which == str(cu / "bin" / "nvcc"), f"nvcc on the clean PATH is {which}, not the pip one"
    assert (
        "V" + versions.pin("pip-cuda-toolchain.nvidia-cuda-nvcc")
        in run(["nvcc", "--version"], env=env).stdout
    )

    # negative control: the raw wheels cannot compile (nvvm/bin/cicc) nor link -lnvrtc (guide 3.2)
    before = run(["nvcc", "-c", "kernel.cu", "-o", "pre.o"], env=env, cwd=work, check=False)
    assert before.returncode != 0 and "cicc" in before.stdout + before.stderr
    pre_check = ocrstack_cli("toolchain", "check", "--python", str(pip_toolchain["py"]), "--json", env=env)
    assert pre_check.returncode == 1 and '"cuda_fp16.h"' in pre_check.stdout

    first = ocrstack_cli("toolchain", "fix-pip-cuda", "--python", str(pip_toolchain["py"]), env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "changed: nothing" not in first.stderr
    stub = cu / "lib64" / "stubs" / "libcuda.so"
    assert stub.exists(), "libcuda stub missing or dangling"
    for name in ("link.stub", "prelink.stub"):
        assert (cu / "bin" / "crt" / name).is_file()

    snap = snapshot(cu)
    second = ocrstack_cli("toolchain", "fix-pip-cuda", "--python", str(pip_toolchain["py"]), env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "changed: nothing" in second.stderr
    assert snapshot(cu) == snap, "second fix-pip-cuda run changed the tree"

    post_check = ocrstack_cli("toolchain", "check", "--python", str(pip_toolchain["py"]), env=env)
    assert post_check.returncode == 0, post_check.stdout + post_check.stderr

    run_env = {**env, "LD_LIBRARY_PATH": str(cu / "lib")}
    # 1. .cu with cuda_fp16.h calling the runtime, cudart shared so ldd can show which one
    run(["nvcc", "-cudart", "shared", "-o", "kernel", "kernel.cu"], env=env, cwd=work)
    out = run(["./kernel"], env=run_env, cwd=work).stdout
    major = versions.pin("torch.cuda_major")
    assert re.search(rf"runtime={major}0\d\d err=\d+", out), out
    ldd = run(["ldd", "./kernel"], env=run_env, cwd=work).stdout
    assert f"libcudart.so.{major} => {cu}/lib/" in ldd, ldd

    # 2. host program linked against nvrtc, compiling a kernel at run time
    run(
        ["g++", f"-I{cu}/include", "nvrtc.cpp", f"-L{cu}/lib", "-lnvrtc", "-o", "nvrtc_host"],
        env=env,
        cwd=work,
    )
    out = run(["./nvrtc_host"], env=run_env, cwd=work).stdout
    assert re.search(rf"nvrtc={major}\.\d+ compile=0 ptx=[1-9]", out), out
    assert f"libnvrtc.so.{major} => {cu}/lib/" in run(["ldd", "./nvrtc_host"], env=run_env, cwd=work).stdout

    # 3. CMake find_package(CUDAToolkit): system cmake if new enough, else the PyPI wheel in the venv
    (work / "CMakeLists.txt").write_text(CMAKELISTS)
    cmake = shutil.which("cmake", path=env["PATH"])
    if cmake is None or cmake_version(cmake) < (3, 24):
        spec = next(s for s in versions.pin("build-tools") if s.startswith("cmake"))
        run([str(pip_toolchain["py"]), "-m", "pip", "install", spec], env=env)
        cmake = str(pip_toolchain["venv"] / "bin" / "cmake")
    conf = run([cmake, "-S", ".", "-B", "build"], env=env, cwd=work)
    assert (
        f"OCRSTACK nvcc={cu}/bin/nvcc version={versions.pin('pip-cuda-toolchain.nvidia-cuda-nvcc')}"
        in conf.stdout
    ), conf.stdout
    driver = re.search(r"OCRSTACK libdir=\S+ driver=(\S+)", conf.stdout)
    assert driver and Path(driver.group(1)).resolve() == (cu / "lib64/stubs/libcuda.so").resolve(), (
        conf.stdout
    )
    run([cmake, "--build", "build"], env=env, cwd=work)
    for target in ("rt", "rtc", "drv", "kern"):
        assert (work / "build" / target).is_file(), target
    assert "err=" in run(["./build/rt"], env=run_env, cwd=work).stdout
    assert f"{cu}/lib/libcudart.so.{major}" in run(["ldd", "./build/rt"], env=run_env, cwd=work).stdout
    assert "compile=0" in run(["./build/rtc"], env=run_env, cwd=work).stdout
    assert "runtime=" in run(["./build/kern"], env=run_env, cwd=work).stdout
    # drv links against the generated stub; it records the driver's soname, resolved only on a GPU host
    needed = run(["readelf", "-d", "./build/drv"], env=env, cwd=work).stdout
    assert "libcuda.so.1" in needed
