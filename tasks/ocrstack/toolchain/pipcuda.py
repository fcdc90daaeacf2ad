"""``ocrstack toolchain fix-pip-cuda``: the guide 3.2 layout fix-up of the pip-wheel CUDA toolkit.

The pip wheels (``nvidia-cuda-nvcc`` & co., pinned in ``envs/versions.yaml``
``pip-cuda-toolchain``) install a toolkit under ``site-packages/nvidia/cu13`` whose
layout differs from what nvcc, CMake's ``FindCUDAToolkit`` and torch's cpp_extension
expect. Guide 3.2 repairs it with ``ln -sf`` commands; this module does the same,
idempotently and safely:

==================================  ==========================================================
``nvvm/bin/cicc``                   link to ``bin/cicc`` (nvcc.profile: ``CICC_PATH = $(TOP)/nvvm/bin``)
``lib64``                           link to ``lib`` (nvcc.profile and CMake search ``lib64``)
``lib/libcudart.so`` ...            unversioned links for cudart, nvrtc, nvJitLink
                                    (guide 8: ``ld: cannot find -lcudart``,
                                    ``CUDA_nvrtc_LIBRARY ... NOTFOUND``)
``lib64/stubs/libcuda.so``          link to the driver's real ``libcuda.so.1`` when present,
                                    otherwise a generated link-time stub (the guide's link to
                                    ``/usr/lib/x86_64-linux-gnu/libcuda.so.1`` dangles on a
                                    machine without a driver)
``bin/crt/{link,prelink}.stub``     copied from a later ``nvidia-cuda-nvcc`` wheel when the
                                    pinned 13.0.48 wheel lacks them (guide 3.2)
==================================  ==========================================================

Rules: a link is only created when its target exists (never a dangling link); an
existing link that resolves to the same file is left alone (so the guide's absolute
links are accepted); a regular file that is not ours is never overwritten. Every
write goes through a temporary name and ``os.replace``. A second run changes nothing.

Modules: :mod:`~ocrstack.toolchain.links` (the safe symlink), :mod:`~ocrstack.toolchain.libcuda`
(driver link or generated stub), this one (``bin/crt`` stubs and :func:`fix`, the entry point).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack import versions
from ocrstack.core import proc
from ocrstack.core.errors import ConfigError, InputError
from ocrstack.core.results import Check, Report, Status
from ocrstack.toolchain import locate
from ocrstack.toolchain.libcuda import ensure_libcuda, find_driver
from ocrstack.toolchain.links import ensure_link
from ocrstack.toolchain.options import FixOptions

__all__ = [
    "CRT_STUBS",
    "UNVERSIONED",
    "FixResult",
    "cuda_major_of",
    "default_stub_version",
    "ensure_crt_stubs",
    "fix",
]

#: Unversioned shared-library links (guide 3.2 names cudart and nvrtc; issue 5 adds nvJitLink).
UNVERSIONED = ("libcudart.so", "libnvrtc.so", "libnvJitLink.so")
CRT_STUBS = ("link.stub", "prelink.stub")
_AUTO = object()


@dataclass
class FixResult:
    """Outcome of :func:`fix`: the report (one check per item) and the paths that changed."""

    report: Report
    changed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no item failed."""
        return self.report.ok


# --------------------------------------------------------------------------- crt stubs


def _download_nvcc_wheel(version: str, dest: Path) -> Path:
    spec = f"nvidia-cuda-nvcc=={version}"
    proc.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(dest),
            spec,
        ],
        capture=True,
    )
    wheels = sorted(dest.glob("nvidia_cuda_nvcc-*.whl"))
    if not wheels:
        raise ConfigError(f"pip download {spec} produced no wheel in {dest}", "pass --stub-wheel FILE")
    return wheels[0]


def ensure_crt_stubs(
    root: Path, *, wheel: Path | None, version: str | None, dry_run: bool = False
) -> tuple[list[Check], list[str]]:
    """Copy ``bin/crt/{link,prelink}.stub`` from a later nvcc wheel when they are missing.

    ``wheel`` is a local ``nvidia_cuda_nvcc-*.whl``; without it ``nvidia-cuda-nvcc==version``
    is downloaded with pip. The wheel's CUDA major must match the toolkit's directory.

    Raises:
        InputError: the wheel is not a zip, or lacks the stubs.
    """
    crt = root / "bin" / "crt"
    missing = [n for n in CRT_STUBS if not (crt / n).is_file()]
    checks = [Check(f"bin/crt/{n}", Status.PASS, "unchanged: present") for n in CRT_STUBS if n not in missing]
    if not missing:
        return checks, []
    if dry_run:
        src = wheel or f"nvidia-cuda-nvcc=={version}"
        return checks + [
            Check(f"bin/crt/{n}", Status.PASS, f"would copy from {src}") for n in missing
        ], missing
    with tempfile.TemporaryDirectory(prefix="ocrstack-nvcc-") as tmp:
        whl = wheel or _download_nvcc_wheel(str(version), Path(tmp))
        try:
            zf = zipfile.ZipFile(whl)
        except (zipfile.BadZipFile, FileNotFoundError) as exc:
            raise InputError(
                f"{whl}: not a readable wheel ({exc})", "pass a nvidia_cuda_nvcc-*.whl file"
            ) from exc
        with zf:
            members = {Path(m).name: m for m in zf.namelist() if f"/{root.name}/bin/crt/" in f"/{m}"}
            crt.mkdir(parents=True, exist_ok=True)
            changed = []
            for n in missing:
                if n not in members:
                    raise InputError(
                        f"{whl} has no {root.name}/bin/crt/{n}",
                        "use a later nvidia-cuda-nvcc wheel of the same CUDA major (guide 3.2)",
                    )
                tmpfile = crt / f".{n}.ocrstack-tmp"
                tmpfile.write_bytes(zf.read(members[n]))
                os.replace(tmpfile, crt / n)
                changed.append(f"bin/crt/{n}")
                checks.append(Check(f"bin/crt/{n}", Status.PASS, f"created: copied from {Path(whl).name}"))
    return checks, changed


def default_stub_version() -> str:
    """The nvcc wheel version to take ``bin/crt/*.stub`` from.

    Guide 3.2 copies them from "an environment with 13.4.92", the release of the pinned
    ``nvidia-nvjitlink`` (``pip-cuda-toolchain.nvidia-nvjitlink`` in envs/versions.yaml),
    so that pin is reused instead of repeating the literal.
    """
    return str(versions.pin("pip-cuda-toolchain.nvidia-nvjitlink"))


# --------------------------------------------------------------------------- entry point


def fix(
    root: Path,
    *,
    cc: str | None = None,
    driver: Path | None | object = _AUTO,
    stub_wheel: Path | None = None,
    stub_version: str | None = None,
    dry_run: bool = False,
) -> FixResult:
    """Apply the guide 3.2 fix-up to the pip CUDA toolkit at ``root`` (``.../site-packages/nvidia/cu13``).

    Args:
        cc: C compiler used to preprocess ``cuda.h`` and build the libcuda stub
            (default ``$CC`` or ``cc``); only needed when no driver is present.
        driver: path of the driver's ``libcuda.so.1``; default: searched (:func:`find_driver`);
            ``None`` forces the generated stub.
        stub_wheel / stub_version: source of ``bin/crt/*.stub`` when missing
            (default: download ``nvidia-cuda-nvcc==`` :func:`default_stub_version`).
        dry_run: report what would change, write nothing.
    Returns:
        :class:`FixResult`; ``changed`` is empty on a second run.
    Raises:
        InputError: ``root`` is not a pip CUDA toolkit directory.
    """
    root = Path(root)
    if not (root / "bin" / "nvcc").is_file():
        raise InputError(
            f"{root}: no bin/nvcc here; not a pip CUDA toolkit directory",
            "pass --cuda-root .../site-packages/nvidia/cu13 or --python of the environment",
        )
    report = Report(f"toolchain fix-pip-cuda {root}{' (dry run)' if dry_run else ''}")
    changed: list[str] = []

    def add(item: tuple[Check, bool]) -> None:
        check, did = item
        report.add(check)
        if did:
            changed.append(check.name)

    add(ensure_link(root, "nvvm/bin/cicc", "../../bin/cicc", dry_run=dry_run))
    add(ensure_link(root, "lib64", "lib", dry_run=dry_run))
    for name in UNVERSIONED:
        add(ensure_link(root, f"lib/{name}", f"{name}.{cuda_major_of(root)}", dry_run=dry_run))
    drv = find_driver() if driver is _AUTO else driver
    cc = cc or os.environ.get("CC") or "cc"
    add(ensure_libcuda(root, driver=drv, cc=cc, dry_run=dry_run))  # type: ignore[arg-type]
    crt_checks, crt_changed = ensure_crt_stubs(
        root, wheel=stub_wheel, version=stub_version or default_stub_version(), dry_run=dry_run
    )
    for c in crt_checks:
        report.add(c)
    changed += crt_changed
    target = root / "include" / "nv" / "target"
    report.add(
        Check(
            "include/nv/target",
            Status.PASS if target.is_file() else Status.FAIL,
            "present" if target.is_file() else "missing: cuda_fp16.h will fail",
            ""
            if target.is_file()
            else f"pip install nvidia-cuda-cccl=={versions.pin('pip-cuda-toolchain.nvidia-cuda-cccl')} "
            "(guide 3.2/8)",
        )
    )
    if not (root / "bin" / "nvdisasm").is_file():
        report.add(
            Check(
                "bin/nvdisasm",
                Status.WARN,
                "missing (not needed to build vLLM's extensions)",
                "copy bin/nvdisasm from a full CUDA 13 toolkit if a tool asks for it (guide 3.2)",
            )
        )
    return FixResult(report, changed)


def fix_environment(opts: FixOptions) -> FixResult:
    """``ocrstack toolchain fix-pip-cuda``: :func:`fix` on ``opts.cuda_root``, else on the pip CUDA
    toolkit of ``opts.python`` (:func:`ocrstack.toolchain.locate.pip_cuda_root`); the driver is
    searched unless ``opts.driver`` is False (then the libcuda stub is generated).

    Raises:
        ConfigError: ``opts.python`` has no ``nvidia-cuda-nvcc`` wheel installed.
        InputError: the directory is not a pip CUDA toolkit.
    """
    root = opts.cuda_root or locate.pip_cuda_root(opts.python)
    return fix(
        root,
        cc=opts.cc,
        driver=_AUTO if opts.driver else None,
        stub_wheel=opts.stub_wheel,
        stub_version=opts.stub_version,
        dry_run=opts.dry_run,
    )


def cuda_major_of(root: Path) -> str:
    """The CUDA major encoded in the toolkit directory name (``cu13`` -> ``"13"``)."""
    m = re.fullmatch(r"cu(\d+)", root.name)
    return m.group(1) if m else str(versions.pin("torch.cuda_major"))
