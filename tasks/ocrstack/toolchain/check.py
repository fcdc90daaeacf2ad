"""``ocrstack toolchain check``: is this CUDA toolchain able to build vLLM (guide 3.2, 8)?

Checks, in order (each a :class:`~ocrstack.core.results.Check`):

1. ``nvcc``: found, and ``nvcc --version`` reports the pinned release
   (``conda-toolchain.cuda`` in envs/versions.yaml, 13.0; same major = warning).
2. ``nvcc-vs-torch``: nvcc's CUDA major equals torch's (cu130 wheels need a CUDA 13
   toolkit; PIXI-NOTES "nvcc's CUDA major must match torch's"; guide 8
   ``--compress-mode=size`` row). Not run when torch is absent from ``--python``.
3. ``host-compiler``: the host g++ is one this nvcc accepts. The limit is read from the
   toolkit's own ``crt/host_config.h`` (``#if __GNUC__ > 15`` -> "unsupported GNU
   version!" in CUDA 13); the build uses gcc 13 (guide 3.2). Without ``--cuda-home`` /
   ``$CUDA_HOME`` the toolkit is nvcc's, symlinks followed; when nvcc is a wrapper script
   (``/usr/local/bin/nvcc`` running ``/usr/local/cuda-13.0/bin/nvcc``) nvcc itself is asked
   (``nvcc -v --dryrun``: ``TOP=`` and ``INCLUDES=``).
4. ``cuda_fp16.h``: a one-line ``.cu`` including ``cuda_fp16.h`` compiles with that host
   compiler, i.e. ``nv/target`` is found (guide 3.2/8: install ``nvidia-cuda-cccl``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ocrstack import versions
from ocrstack.core import proc
from ocrstack.core.errors import ConfigError, StepFailed
from ocrstack.core.results import Check, Report, Status
from ocrstack.toolchain import locate
from ocrstack.toolchain.options import ToolchainOptions

_TORCH_CUDA = (
    "import importlib.metadata as m, re, sys\n"
    "try:\n"
    "    v = m.version('torch')\n"
    "except m.PackageNotFoundError:\n"
    "    sys.exit(3)\n"
    "loc = re.search(r'\\+cu(\\d+)', v)\n"
    "if loc:\n"
    "    d = loc.group(1); print(v, d[:-1] + '.' + d[-1]); sys.exit(0)\n"
    "import torch\n"
    "print(v, torch.version.cuda or 'cpu')\n"
)


def parse_nvcc_version(text: str) -> tuple[int, int, str]:
    """Parse ``nvcc --version`` output -> ``(major, minor, full)``, e.g. ``(13, 0, "13.0.48")``.

    Raises:
        ValueError: no ``release X.Y`` in the text.
    """
    m = re.search(r"release (\d+)\.(\d+)(?:, V([\d.]+))?", text)
    if not m:
        raise ValueError("no 'release X.Y' in nvcc --version output")
    return int(m.group(1)), int(m.group(2)), m.group(3) or f"{m.group(1)}.{m.group(2)}"


def max_gnu_major(host_config: str) -> int | None:
    """Return N from ``#if __GNUC__ > N`` in ``crt/host_config.h`` (the newest gcc nvcc accepts)."""
    m = re.search(r"#if\s+__GNUC__\s*>\s*(\d+)", host_config)
    return int(m.group(1)) if m else None


def gcc_major(version_text: str, dumpversion: str) -> int | None:
    """Major of a GNU compiler from ``--version``/``-dumpversion``; None for clang or unknown."""
    if "clang" in version_text.lower():
        return None
    m = re.match(r"(\d+)", dumpversion.strip())
    return int(m.group(1)) if m else None


_HOST_CONFIG = Path("crt") / "host_config.h"


@dataclass(frozen=True)
class NvccLayout:
    """What ``nvcc -v --dryrun`` says about its own toolkit.

    ``top`` is nvcc's ``TOP`` (the toolkit root, symlinks resolved), ``includes`` the
    ``-I`` directories of its ``INCLUDES`` line (conda-forge: ``targets/x86_64-linux/include``).
    """

    top: Path | None
    includes: tuple[Path, ...]


def parse_nvcc_dryrun(text: str) -> NvccLayout:
    """Parse the ``#$ TOP=...`` and ``#$ INCLUDES="-I..."`` lines of ``nvcc -v --dryrun`` output.

    nvcc prints its driver variables before the commands it would run, e.g.
    ``#$ TOP=/usr/local/cuda-13.0/bin/..`` and
    ``#$ INCLUDES="-I/usr/local/cuda-13.0/bin/../targets/x86_64-linux/include"``
    (captured from CUDA 13.0 on this machine). Paths are returned as printed (not resolved).
    """
    top = None
    includes: list[Path] = []
    for line in text.splitlines():
        m = re.match(r"#\$ TOP=(.+?)\s*$", line)
        if m:
            top = Path(m.group(1))
        elif line.startswith("#$ INCLUDES="):
            includes += [Path(d) for d in re.findall(r'-I"?([^"\s]+)"?', line)]
    return NvccLayout(top, tuple(includes))


def nvcc_layout(nvcc: str) -> NvccLayout:
    """Ask ``nvcc`` where its toolkit is: ``nvcc -v --dryrun -x cu -c /dev/null`` (runs nothing else).

    Needed when ``nvcc`` is a wrapper script (e.g. ``/usr/local/bin/nvcc`` running
    ``exec /usr/local/cuda-13.0/bin/nvcc "$@"``): its own ``..`` is not the toolkit.
    Returns an empty layout when nvcc cannot say.
    """
    argv = [nvcc, "-v", "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull]
    try:
        done = proc.run(argv, capture=True, check=False, echo=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired, ConfigError):
        return NvccLayout(None, ())
    return parse_nvcc_dryrun(done.stdout + done.stderr)


def toolkit_home(nvcc: str, ask: Callable[[str], NvccLayout] = nvcc_layout) -> Path:
    """The CUDA toolkit root of ``nvcc``.

    ``<nvcc with symlinks resolved>/../..`` when that directory has ``include/crt/host_config.h``;
    otherwise (a wrapper script, or conda-forge's split layout) nvcc's own ``TOP``
    from :func:`nvcc_layout`, resolved; the ``..`` guess when nvcc cannot tell either.
    """
    guess = Path(nvcc).resolve().parent.parent
    if (guess / "include" / _HOST_CONFIG).is_file():
        return guess
    layout = ask(nvcc)
    return layout.top.resolve() if layout.top is not None else guess


def find_host_config(
    home: Path | None, nvcc: str | None, ask: Callable[[str], NvccLayout] = nvcc_layout
) -> Path | None:
    """``crt/host_config.h`` of the toolkit: ``home/include`` first, then the include dirs nvcc uses.

    Returns None when none of them has it.
    """
    if home is not None and (home / "include" / _HOST_CONFIG).is_file():
        return home / "include" / _HOST_CONFIG
    if nvcc is None:
        return None
    layout = ask(nvcc)
    dirs = [*layout.includes, *([layout.top / "include"] if layout.top is not None else [])]
    for d in dirs:
        if (d / _HOST_CONFIG).is_file():
            return (d / _HOST_CONFIG).resolve()
    return None


def _resolve(opts: ToolchainOptions) -> tuple[str | None, str, Path | None]:
    env = os.environ
    nvcc = opts.nvcc
    home = opts.cuda_home or (Path(env["CUDA_HOME"]) if env.get("CUDA_HOME") else None)
    if nvcc is None and home is not None:
        found = locate.nvcc_for(home)  # CUDA_HOME/bin/nvcc, or conda's $CONDA_PREFIX/bin/nvcc
        nvcc = str(found) if found else None
    nvcc = nvcc or shutil.which("nvcc")
    if home is None and nvcc:
        home = toolkit_home(nvcc)
    cxx = opts.cxx or env.get("CUDAHOSTCXX") or env.get("CXX") or "g++"
    return nvcc, cxx, home


def check(opts: ToolchainOptions) -> Report:
    """Run the four toolchain checks; returns a :class:`Report` (caller maps ``ok`` to the exit code)."""
    nvcc, cxx, home = _resolve(opts)
    report = Report(f"toolchain check (nvcc={nvcc or '-'}, host compiler={cxx}, CUDA_HOME={home or '-'})")
    want = str(versions.pin("conda-toolchain.cuda"))
    if not nvcc:
        report.add(
            Check(
                "nvcc",
                Status.FAIL,
                "nvcc not found (CUDA_HOME unset and not on PATH)",
                "set CUDA_HOME (guide 4) or run in the pixi vllm-build environment",
                want,
                None,
            )
        )
        for name in ("nvcc-vs-torch", "host-compiler", "cuda_fp16.h"):
            report.add(Check(name, Status.NOT_RUN, "no nvcc"))
        return report
    out = proc.run([nvcc, "--version"], capture=True, check=False, echo=False)
    try:
        major, minor, full = parse_nvcc_version(out.stdout + out.stderr)
    except ValueError:
        report.add(
            Check(
                "nvcc",
                Status.FAIL,
                f"{nvcc} --version: unreadable output (exit {out.returncode})",
                "reinstall the CUDA toolkit (guide 3.2)",
                want,
                None,
            )
        )
        return report
    release = f"{major}.{minor}"
    if release == want:
        report.add(Check("nvcc", Status.PASS, f"{nvcc}: {full}", expected=want, found=full))
    elif str(major) == want.split(".")[0]:
        report.add(
            Check(
                "nvcc",
                Status.WARN,
                f"{nvcc}: {full} (pinned {want})",
                "the guide's verified toolkit is CUDA 13.0 (guide 3.2, 9)",
                want,
                full,
            )
        )
    else:
        report.add(
            Check(
                "nvcc",
                Status.FAIL,
                f"{nvcc}: {full} (want {want})",
                f"use a CUDA {want} toolkit: pixi run -e vllm-build, or the pip wheels (guide 3.2)",
                want,
                full,
            )
        )
    report.add(_torch_check(opts.python, major))
    report.add(_host_compiler_check(cxx, home, major, find_host_config(home, nvcc)))
    report.add(_fp16_check(nvcc, cxx))
    return report


def _torch_check(python: str, nvcc_major: int) -> Check:
    done = proc.run([python, "-c", _TORCH_CUDA], capture=True, check=False, echo=False)
    if done.returncode == 3:
        return Check("nvcc-vs-torch", Status.NOT_RUN, f"torch not installed in {python}")
    if done.returncode != 0 or not done.stdout.strip():
        return Check(
            "nvcc-vs-torch",
            Status.FAIL,
            f"cannot read torch's CUDA version: {done.stderr.strip()[-200:]}",
            "reinstall torch from the cu130 index (guide 3.2)",
        )
    torch_version, torch_cuda = done.stdout.split()[:2]
    t = versions.pin("torch")
    fix = f"pip install torch=={t['torch']} --index-url {t['index']} (guide 3.2)"
    if torch_cuda == "cpu":
        return Check(
            "nvcc-vs-torch", Status.FAIL, f"torch {torch_version} is a CPU build", fix, str(nvcc_major), "cpu"
        )
    ok = torch_cuda.split(".")[0] == str(nvcc_major)
    return Check(
        "nvcc-vs-torch",
        Status.PASS if ok else Status.FAIL,
        f"torch {torch_version} (CUDA {torch_cuda}) vs nvcc CUDA {nvcc_major}",
        "" if ok else fix + f" or a CUDA {torch_cuda.split('.')[0]} toolkit (PIXI-NOTES)",
        str(nvcc_major),
        torch_cuda,
    )


def _host_compiler_check(
    cxx: str, home: Path | None, nvcc_major: int, host_config: Path | None = None
) -> Check:
    if not shutil.which(cxx):
        return Check(
            "host-compiler",
            Status.FAIL,
            f"{cxx} not found",
            "install g++-13 (guide 3.2) or use the pixi vllm-build environment",
        )
    ver = proc.run([cxx, "--version"], capture=True, check=False, echo=False).stdout
    dump = proc.run([cxx, "-dumpversion"], capture=True, check=False, echo=False).stdout
    gmajor = gcc_major(ver, dump)
    cfg = host_config or (home / "include" / _HOST_CONFIG if home else None)
    limit = (
        max_gnu_major(cfg.read_text(encoding="utf-8", errors="replace")) if cfg and cfg.is_file() else None
    )
    if gmajor is None:
        return Check(
            "host-compiler",
            Status.WARN,
            f"{cxx} is not GNU g++ ({ver.splitlines()[0] if ver else '?'})",
            "the guide builds with g++-13 (guide 3.2)",
        )
    if limit is None:
        return Check(
            "host-compiler",
            Status.WARN,
            f"{cxx}: gcc {gmajor}; limit unknown ({cfg} not readable)",
            "the cuda_fp16.h compile below shows whether nvcc accepts it",
            found=str(gmajor),
        )
    ok = gmajor <= limit
    return Check(
        "host-compiler",
        Status.PASS if ok else Status.FAIL,
        f"{cxx}: gcc {gmajor}; nvcc {nvcc_major} accepts gcc <= {limit} (crt/host_config.h)",
        "" if ok else "install gcc-13/g++-13 and set CC/CXX/CUDAHOSTCXX (guide 3.2)",
        f"<= {limit}",
        str(gmajor),
    )


def ccbin_args(cxx: str, env: dict[str, str] | None = None) -> list[str]:
    """``["-ccbin", cxx]`` unless the environment already passes one to nvcc.

    conda-forge's nvcc activation puts ``-ccbin=$CXX`` into ``NVCC_PREPEND_FLAGS``; a second
    ``-ccbin`` makes nvcc stop with "redefinition of argument 'compiler-bindir'".
    """
    env = os.environ if env is None else env
    flags = f"{env.get('NVCC_PREPEND_FLAGS', '')} {env.get('NVCC_APPEND_FLAGS', '')}"
    return [] if re.search(r"(^|\s)(-ccbin|--compiler-bindir)\b", flags) else ["-ccbin", cxx]


def _fp16_check(nvcc: str, cxx: str) -> Check:
    with tempfile.TemporaryDirectory(prefix="ocrstack-fp16-") as tmp:
        src = Path(tmp) / "probe.cu"
        src.write_text(
            "#include <cuda_fp16.h>\n__global__ void k(__half *x) { x[0] = __float2half(1.0f); }\n",
            encoding="utf-8",
        )
        try:
            done = proc.run(
                [nvcc, *ccbin_args(cxx), "-c", str(src), "-o", str(Path(tmp) / "probe.o")],
                capture=True,
                check=False,
                echo=False,
                timeout=300,
            )
        except StepFailed as exc:  # pragma: no cover - only on timeout wrappers
            return Check("cuda_fp16.h", Status.FAIL, str(exc))
    text = (done.stdout + done.stderr).strip()
    if done.returncode == 0:
        return Check("cuda_fp16.h", Status.PASS, "compiles (nv/target found)")
    if "nv/target" in text:
        cccl = versions.pin("pip-cuda-toolchain.nvidia-cuda-cccl")
        fix = f"pip install nvidia-cuda-cccl=={cccl} (guide 3.2/8)"
    elif "unsupported GNU version" in text:
        fix = "use g++-13 as host compiler: CUDAHOSTCXX=g++-13 (guide 3.2)"
    elif "cicc" in text:
        fix = "ocrstack toolchain fix-pip-cuda (guide 3.2: nvvm/bin/cicc link)"
    else:
        fix = "read the compiler output; `ocrstack doctor` knows the guide 8 errors"
    last = text.splitlines()[-1] if text else f"exit {done.returncode}"
    return Check("cuda_fp16.h", Status.FAIL, f"probe compile failed: {last[:300]}", fix)
