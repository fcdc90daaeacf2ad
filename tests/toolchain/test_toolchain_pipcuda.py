"""Unit tests for ocrstack.toolchain.pipcuda (guide 3.2 fix-up) on fake toolkit trees in tmp dirs."""

from __future__ import annotations

import ctypes
import os
import zipfile
from pathlib import Path

import pytest

from ocrstack.core.errors import InputError
from ocrstack.core.results import Status
from ocrstack.toolchain import libcuda, links, pipcuda


def make_toolkit(tmp: Path, *, crt: bool = False) -> Path:
    """A pip-wheel-shaped cu13 tree as the 13.0.48 wheels leave it (no links, no crt stubs)."""
    root = tmp / "site-packages" / "nvidia" / "cu13"
    for rel in (
        "bin/nvcc",
        "bin/cicc",
        "lib/libcudart.so.13",
        "lib/libnvrtc.so.13",
        "lib/libnvJitLink.so.13",
        "include/nv/target",
    ):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(rel)
    (root / "include" / "cuda.h").write_text(
        "typedef int CUresult;\n#define CUDAAPI\n#define cuMemAlloc cuMemAlloc_v2\n"
        "CUresult CUDAAPI cuInit(unsigned int flags);\n"
        "CUresult CUDAAPI cuMemAlloc(void **p, unsigned long n);\n"
        "CUresult CUDAAPI cuDriverGetVersion(int *v);\n"
    )
    (root / "nvvm" / "libdevice").mkdir(parents=True)
    if crt:
        (root / "bin" / "crt").mkdir()
        for n in pipcuda.CRT_STUBS:
            (root / "bin" / "crt" / n).write_text("already here")
    return root


def make_nvcc_wheel(tmp: Path, members: dict[str, str]) -> Path:
    whl = tmp / "nvidia_cuda_nvcc-13.4.92-py3-none-manylinux2014_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return whl


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under root: link target, or file size + mtime, or 'dir'."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir",)
            else:
                st = p.stat()
                out[rel] = ("file", st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def fake_driver(tmp_path: Path) -> Path:
    drv = tmp_path / "driver" / "libcuda.so.1"
    drv.parent.mkdir()
    drv.write_text("driver")
    return drv


def test_links_made_relative_and_resolving(tmp_path: Path, fake_driver: Path) -> None:
    root = make_toolkit(tmp_path, crt=True)
    result = pipcuda.fix(root, driver=fake_driver)
    assert result.ok, result.report.to_text()
    assert os.readlink(root / "nvvm/bin/cicc") == "../../bin/cicc"
    assert (root / "nvvm/bin/cicc").read_text() == "bin/cicc"
    assert os.readlink(root / "lib64") == "lib"
    for name in ("libcudart.so", "libnvrtc.so", "libnvJitLink.so"):
        assert (root / "lib" / name).resolve() == (root / "lib" / f"{name}.13").resolve()
    stub = root / "lib64" / "stubs" / "libcuda.so"
    assert stub.is_symlink() and stub.resolve() == fake_driver.resolve()
    assert set(result.changed) == {
        "nvvm/bin/cicc",
        "lib64",
        "lib/libcudart.so",
        "lib/libnvrtc.so",
        "lib/libnvJitLink.so",
        "lib64/stubs/libcuda.so",
    }


def test_second_run_changes_nothing(tmp_path: Path, fake_driver: Path) -> None:
    root = make_toolkit(tmp_path, crt=True)
    pipcuda.fix(root, driver=fake_driver)
    before = snapshot(root)
    again = pipcuda.fix(root, driver=fake_driver)
    assert again.changed == []
    assert snapshot(root) == before
    assert all(
        c.detail.startswith(("unchanged", "present")) for c in again.report.checks if c.status is Status.PASS
    ), again.report.to_text()


def test_never_a_dangling_link(tmp_path: Path) -> None:
    root = make_toolkit(tmp_path, crt=True)
    (root / "bin" / "cicc").unlink()  # nvidia-nvvm not installed
    check, changed = links.ensure_link(root, "nvvm/bin/cicc", "../../bin/cicc")
    assert check.status is Status.FAIL and not changed
    assert not (root / "nvvm/bin/cicc").is_symlink()


def test_guide_absolute_link_accepted_and_dangling_guide_link_replaced(
    tmp_path: Path, fake_driver: Path
) -> None:
    root = make_toolkit(tmp_path, crt=True)
    # the guide's `ln -sf "$CU/lib/libcudart.so.13" "$CU/lib/libcudart.so"`: absolute, same file
    os.symlink(root / "lib" / "libcudart.so.13", root / "lib" / "libcudart.so")
    # the guide's libcuda link on a machine without a driver: dangles
    (root / "lib" / "stubs").mkdir()
    os.symlink("/usr/lib/x86_64-linux-gnu/does-not-exist/libcuda.so.1", root / "lib" / "stubs" / "libcuda.so")
    result = pipcuda.fix(root, driver=fake_driver)
    cudart = next(c for c in result.report.checks if c.name == "lib/libcudart.so")
    assert cudart.detail.startswith("unchanged")
    assert os.readlink(root / "lib" / "libcudart.so") == str(root / "lib" / "libcudart.so.13")
    assert (root / "lib" / "stubs" / "libcuda.so").resolve() == fake_driver.resolve()
    assert "lib64/stubs/libcuda.so" in result.changed


def test_regular_file_left_alone(tmp_path: Path, fake_driver: Path) -> None:
    root = make_toolkit(tmp_path, crt=True)
    (root / "lib" / "libnvrtc.so").write_text("a real file someone put here")
    result = pipcuda.fix(root, driver=fake_driver)
    nvrtc = next(c for c in result.report.checks if c.name == "lib/libnvrtc.so")
    assert nvrtc.status is Status.WARN
    assert (root / "lib" / "libnvrtc.so").read_text() == "a real file someone put here"


def test_crt_stubs_copied_from_later_wheel(tmp_path: Path, fake_driver: Path) -> None:
    root = make_toolkit(tmp_path)
    whl = make_nvcc_wheel(
        tmp_path,
        {
            "nvidia/cu13/bin/crt/link.stub": "LINK",
            "nvidia/cu13/bin/crt/prelink.stub": "PRELINK",
            "nvidia/cu13/bin/nvcc": "x",
        },
    )
    result = pipcuda.fix(root, driver=fake_driver, stub_wheel=whl)
    assert (root / "bin/crt/link.stub").read_text() == "LINK"
    assert (root / "bin/crt/prelink.stub").read_text() == "PRELINK"
    assert {"bin/crt/link.stub", "bin/crt/prelink.stub"} <= set(result.changed)
    # present now: the wheel is not even opened again
    again = pipcuda.fix(root, driver=fake_driver, stub_wheel=tmp_path / "gone.whl")
    assert again.changed == []


def test_crt_stub_wheel_without_stubs_is_an_input_error(tmp_path: Path, fake_driver: Path) -> None:
    root = make_toolkit(tmp_path)
    whl = make_nvcc_wheel(tmp_path, {"nvidia/cu13/bin/nvcc": "x"})  # like the 13.0.48 wheel
    with pytest.raises(InputError, match="link.stub"):
        pipcuda.fix(root, driver=fake_driver, stub_wheel=whl)
    assert not (root / "bin/crt/link.stub").exists()


def test_dry_run_writes_nothing(tmp_path: Path, fake_driver: Path) -> None:
    root = make_toolkit(tmp_path)
    before = snapshot(root)
    result = pipcuda.fix(root, driver=fake_driver, stub_wheel=tmp_path / "x.whl", dry_run=True)
    assert snapshot(root) == before
    assert "lib64" in result.changed
    assert any(c.detail.startswith("would") for c in result.report.checks)


def test_missing_cccl_reported(tmp_path: Path, fake_driver: Path) -> None:
    root = make_toolkit(tmp_path, crt=True)
    (root / "include" / "nv" / "target").unlink()
    result = pipcuda.fix(root, driver=fake_driver)
    bad = next(c for c in result.report.checks if c.name == "include/nv/target")
    assert bad.status is Status.FAIL and "nvidia-cuda-cccl==" in bad.fix
    assert not result.ok


def test_not_a_toolkit(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="bin/nvcc"):
        pipcuda.fix(tmp_path)


def test_find_driver_skips_stubs(tmp_path: Path) -> None:
    stubs = tmp_path / "cuda" / "lib64" / "stubs"
    stubs.mkdir(parents=True)
    (stubs / "libcuda.so.1").write_text("toolkit stub")
    real = tmp_path / "usr" / "lib"
    real.mkdir(parents=True)
    assert libcuda.find_driver([str(stubs), str(real)]) is None
    (real / "libcuda.so.590.48.01").write_text("driver")
    os.symlink("libcuda.so.590.48.01", real / "libcuda.so.1")
    assert libcuda.find_driver([str(stubs), str(real)]) == real / "libcuda.so.1"


def test_loader_dirs_follow_includes(tmp_path: Path) -> None:
    (tmp_path / "ld.so.conf.d").mkdir()
    (tmp_path / "ld.so.conf").write_text("include ld.so.conf.d/*.conf\n/opt/first\n")
    (tmp_path / "ld.so.conf.d" / "a.conf").write_text("# comment\n/usr/local/cuda-13.0/lib\n")
    (tmp_path / "ld.so.conf.d" / "b.conf").write_text("/usr/lib/x86_64-linux-gnu\n")
    assert libcuda.loader_dirs(tmp_path / "ld.so.conf") == [
        "/usr/local/cuda-13.0/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/opt/first",
    ]


def test_stub_source_lists_every_symbol() -> None:
    src = libcuda.stub_source(["cuInit", "cuMemAlloc_v2"])
    assert "int cuInit(void) { return 34; }" in src
    assert "int cuMemAlloc_v2(void)" in src and libcuda.STUB_SYMBOL in src


@pytest.mark.proc
def test_generated_stub_links_and_is_replaced_by_driver_later(tmp_path: Path, fake_driver: Path) -> None:
    """No driver: a real shared library is compiled from cuda.h's declarations (cc), loadable by ctypes."""
    root = make_toolkit(tmp_path, crt=True)
    result = pipcuda.fix(root, driver=None, cc="cc")
    assert result.ok, result.report.to_text()
    stub = root / "lib64" / "stubs" / "libcuda.so"
    assert stub.is_file() and not stub.is_symlink()
    lib = ctypes.CDLL(str(stub))
    assert lib.cuInit(0) == 34 and lib.cuMemAlloc_v2() == 34 and lib.cuDriverGetVersion() == 34
    with pytest.raises(AttributeError):
        lib.cuMemAlloc  # noqa: B018 - the macro maps it to _v2, as in the real header
    assert pipcuda.fix(root, driver=None, cc="cc").changed == []  # idempotent
    later = pipcuda.fix(root, driver=fake_driver, cc="cc")  # a driver got installed
    assert later.changed == ["lib64/stubs/libcuda.so"]
    assert stub.is_symlink() and stub.resolve() == fake_driver.resolve()
    assert not (root / "lib" / "stubs" / libcuda.STUB_MARKER).exists()
