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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ocrstack import versions
from ocrstack.core import proc
from ocrstack.core.errors import ConfigError, InputError
from ocrstack.core.results import Check, Report, Status

#: Unversioned shared-library links (guide 3.2 names cudart and nvrtc; issue 5 adds nvJitLink).
UNVERSIONED = ("libcudart.so", "libnvrtc.so", "libnvJitLink.so")
CRT_STUBS = ("link.stub", "prelink.stub")
STUB_MARKER = "libcuda.so.ocrstack.json"
#: Symbol exported by the generated stub so it can be recognised with ``nm``.
STUB_SYMBOL = "ocrstack_generated_libcuda_stub"
#: Standard driver locations, searched after the dynamic loader's configured directories.
DRIVER_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/wsl/lib",
    "/usr/local/nvidia/lib64",
    "/usr/lib/aarch64-linux-gnu",
)
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


# --------------------------------------------------------------------------- helpers


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve(strict=True) == b.resolve(strict=True)
    except (FileNotFoundError, RuntimeError):
        return False


def _atomic_symlink(link: Path, target: str) -> None:
    tmp = link.with_name(f".{link.name}.ocrstack-tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)


def ensure_link(root: Path, rel_link: str, target: str, *, dry_run: bool = False) -> tuple[Check, bool]:
    """Make ``root/rel_link`` a symlink to ``target`` (relative to the link's directory, or absolute).

    Returns ``(check, changed)``. Never creates a dangling link: when ``target`` does
    not exist the check fails and nothing is written. An existing link resolving to the
    same file is left as is; a dangling or wrong link is replaced atomically; a regular
    file or directory at ``rel_link`` is left alone with a warning.
    """
    link = root / rel_link
    # normpath: the link's own directory may not exist yet (nvvm/bin), so resolve '..' textually
    dest = Path(target) if os.path.isabs(target) else Path(os.path.normpath(link.parent / target))
    if not dest.exists():
        return Check(
            rel_link,
            Status.FAIL,
            f"target {dest} does not exist; no link made",
            "install the pinned pip CUDA wheels (guide 3.2): ocrstack versions show",
        ), False
    if link.is_symlink():
        if _same_file(link, dest):
            return Check(rel_link, Status.PASS, f"unchanged: -> {os.readlink(link)}"), False
        old = os.readlink(link)
        if not dry_run:
            _atomic_symlink(link, target)
        verb = "would replace" if dry_run else "replaced"
        return Check(
            rel_link,
            Status.PASS,
            f"{verb}: -> {target} (was -> {old}, {'dangling' if not link.exists() else 'another file'})",
        ), True
    if link.exists():
        if _same_file(link, dest):  # e.g. lib64 is already the same directory
            return Check(rel_link, Status.PASS, "unchanged: already the same file"), False
        return Check(
            rel_link,
            Status.WARN,
            f"a regular {'directory' if link.is_dir() else 'file'} is there; left alone",
            f"remove {link} and rerun if it is wrong",
        ), False
    if not dry_run:
        link.parent.mkdir(parents=True, exist_ok=True)
        _atomic_symlink(link, target)
    return Check(rel_link, Status.PASS, f"{'would create' if dry_run else 'created'}: -> {target}"), True


def loader_dirs(conf: Path = Path("/etc/ld.so.conf")) -> list[str]:
    """Directories named in the dynamic loader configuration (``include`` globs followed), in order."""
    out: list[str] = []

    def read(path: Path, depth: int = 0) -> None:
        if depth > 4 or not path.is_file():
            return
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("include "):
                pattern = line.split(None, 1)[1]
                base = Path(pattern) if os.path.isabs(pattern) else path.parent / pattern
                for inc in sorted(base.parent.glob(base.name)):
                    read(inc, depth + 1)
            else:
                out.append(line)

    read(conf)
    return out


def find_driver(dirs: Iterable[str] | None = None) -> Path | None:
    """Return the NVIDIA driver's ``libcuda.so.1`` if one exists, else None.

    Searches the loader's directories then :data:`DRIVER_DIRS`; a ``libcuda.so.1``
    under a ``stubs`` directory (a toolkit's link-time stub) is not a driver.
    """
    seen: set[str] = set()
    for d in [*(dirs if dirs is not None else [*loader_dirs(), *DRIVER_DIRS])]:
        if d in seen:
            continue
        seen.add(d)
        cand = Path(d) / "libcuda.so.1"
        if "stubs" in cand.parts or not cand.exists():
            continue
        if "stubs" in cand.resolve().parts:
            continue
        return cand
    return None


def stub_symbols(include_dir: Path, cc: str) -> list[str]:
    """Return every driver-API function name that ``include_dir/cuda.h`` declares.

    The header is preprocessed three times (default, per-thread default stream,
    ``__CUDA_API_VERSION_INTERNAL``) so the ``_v2``/``_ptsz``/``_ptds`` variants and the
    legacy names the real ``libcuda.so`` exports are all included.

    Raises:
        ConfigError: ``cuda.h`` is missing (``nvidia-cuda-runtime`` not installed).
        StepFailed: the preprocessor failed.
    """
    header = include_dir / "cuda.h"
    if not header.is_file():
        raise ConfigError(f"{header} not found", "install the pinned nvidia-cuda-runtime wheel (guide 3.2)")
    names: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="ocrstack-cudah-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text("#include <cuda.h>\n", encoding="utf-8")
        for define in ([], ["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"], ["-D__CUDA_API_VERSION_INTERNAL"]):
            out = proc.run([cc, "-E", "-P", *define, f"-I{include_dir}", str(src)], capture=True, echo=False)
            names.update(re.findall(r"\bCUresult\s+(cu[A-Za-z0-9_]+)\s*\(", out.stdout))
    return sorted(names)


def stub_source(symbols: Iterable[str]) -> str:
    """C source of a link-time ``libcuda.so`` stub: each symbol returns CUDA_ERROR_STUB_LIBRARY (34)."""
    lines = [
        "/* Generated by `ocrstack toolchain fix-pip-cuda`: link-time stub for libcuda.so,",
        " * used only when no NVIDIA driver is installed. At run time the driver's",
        " * libcuda.so.1 is loaded instead (the stub's soname is libcuda.so.1). */",
        f"int {STUB_SYMBOL} = 1;",
    ]
    lines += [f"int {name}(void) {{ return 34; }}" for name in symbols]
    return "\n".join(lines) + "\n"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_marker(stubs: Path) -> dict | None:
    try:
        return json.loads((stubs / STUB_MARKER).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _write_marker(stubs: Path, data: dict) -> None:
    tmp = stubs / f".{STUB_MARKER}.tmp"
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, stubs / STUB_MARKER)


def ensure_libcuda(root: Path, *, driver: Path | None, cc: str, dry_run: bool = False) -> tuple[Check, bool]:
    """Provide ``lib64/stubs/libcuda.so``: a link to ``driver`` or a generated stub (never dangling).

    A stub we generated earlier is kept while ``cuda.h`` is unchanged and no driver is
    present; it is replaced by a link once a driver appears. A regular file we did not
    generate (e.g. copied from a full toolkit) is left alone.
    """
    name = "lib64/stubs/libcuda.so"
    stubs = root / "lib" / "stubs"
    target = stubs / "libcuda.so"
    marker = _read_marker(stubs)
    if driver is not None:
        if marker is not None and target.is_file() and not target.is_symlink() and Path(driver).exists():
            # our generated stub, and a driver has appeared since: replace the stub by a link
            if not dry_run:
                _atomic_symlink(target, str(driver))
                (stubs / STUB_MARKER).unlink(missing_ok=True)
            verb = "would replace" if dry_run else "replaced"
            return Check(name, Status.PASS, f"{verb}: generated stub -> {driver} (driver)"), True
        check, changed = ensure_link(root, "lib/stubs/libcuda.so", str(driver), dry_run=dry_run)
        return Check(name, check.status, check.detail + " (driver)", check.fix), changed
    header = root / "include" / "cuda.h"
    if not header.is_file():
        return Check(
            name,
            Status.FAIL,
            f"{header} missing; cannot generate a stub",
            "install the pinned nvidia-cuda-runtime wheel (guide 3.2)",
        ), False
    digest = _sha256(header)
    if target.is_file() and not target.is_symlink():
        if marker and marker.get("cuda_h_sha256") == digest:
            return Check(
                name, Status.PASS, f"unchanged: generated stub ({marker.get('symbols')} symbols)"
            ), False
        if not marker:
            return Check(
                name,
                Status.WARN,
                "a libcuda.so not made by ocrstack is there; left alone",
                f"remove {target} and rerun to generate a stub",
            ), False
    if dry_run:
        return Check(name, Status.PASS, "would generate a link-time stub (no driver found)"), True
    symbols = stub_symbols(root / "include", cc)
    stubs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ocrstack-stub-", dir=stubs) as tmp:
        src = Path(tmp) / "libcuda_stub.c"
        src.write_text(stub_source(symbols), encoding="utf-8")
        out = Path(tmp) / "libcuda.so"
        proc.run(
            [cc, "-shared", "-fPIC", "-O0", "-Wl,-soname,libcuda.so.1", "-o", str(out), str(src)],
            capture=True,
            echo=False,
        )
        was = "replaced dangling link" if target.is_symlink() else "created"
        os.replace(out, target)
    _write_marker(
        stubs,
        {"generator": "ocrstack toolchain fix-pip-cuda", "cuda_h_sha256": digest, "symbols": len(symbols)},
    )
    return Check(
        name, Status.PASS, f"{was}: generated stub with {len(symbols)} driver symbols (no driver found)"
    ), True


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


def cuda_major_of(root: Path) -> str:
    """The CUDA major encoded in the toolkit directory name (``cu13`` -> ``"13"``)."""
    m = re.fullmatch(r"cu(\d+)", root.name)
    return m.group(1) if m else str(versions.pin("torch.cuda_major"))
