"""Judge preflight facts against the thresholds in envs/versions.yaml ``hardware`` (guide 2, 10).

Pure functions: :func:`evaluate` turns :class:`~ocrstack.preflight.facts.Facts` into a
:class:`PreflightReport`; nothing here runs a command. A required check (:data:`REQUIRED`) that
could not run leaves the preflight incomplete: the report is not ``ok`` and the CLI exits 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ocrstack import versions
from ocrstack.core.errors import CheckFailed
from ocrstack.core.results import Check, Report, Status
from ocrstack.gpu import Gpu, driver_major
from ocrstack.preflight.facts import Facts, PythonEnv

#: vLLM's --gpu-memory-utilization in guide 4.1/4.2: the share of a GPU that must be free at start.
GPU_MEMORY_UTILIZATION = 0.85
#: Oldest driver branch per CUDA major of a torch build. 13: envs/versions.yaml hardware.driver-min
#: (guide 2: cu130 needs 580+). 12: NVIDIA CUDA 12 minor-version compatibility needs >= 525
#: (CUDA Toolkit release notes, "CUDA Toolkit and Minimum Required Driver Version").
CUDA12_DRIVER_MIN = 525


@dataclass(frozen=True)
class Thresholds:
    """Floors from envs/versions.yaml ``hardware`` (guide 2 and 10)."""

    driver_min: int
    driver_cu126_min: int
    vram_min_gb: float
    disk_min_gb: float

    @classmethod
    def from_pins(cls) -> Thresholds:
        """Read ``hardware.*`` from envs/versions.yaml."""
        return cls(
            int(versions.pin("hardware.driver-min")),
            int(versions.pin("hardware.driver-cu126-min")),
            float(versions.pin("hardware.vram-min-gb")),
            float(versions.pin("hardware.disk-min-gb")),
        )


def _mib(v: int | None) -> str:
    return "?" if v is None else f"{v} MiB"


def check_smi(facts: Facts, require_gpu: bool) -> Check:
    """Is there a working nvidia-smi? Missing = not-run (or fail with ``require_gpu``)."""
    if facts.smi is None:
        return Check(
            "nvidia-smi",
            Status.FAIL if require_gpu else Status.NOT_RUN,
            "no NVIDIA GPU here (nvidia-smi not found); GPU and driver checks did not run",
            "run `ocrstack preflight` on the GPU host (the SDK itself runs without a GPU, guide 1)",
        )
    if facts.smi_error:
        return Check(
            "nvidia-smi",
            Status.FAIL,
            f"nvidia-smi failed: {facts.smi_error.splitlines()[0]}",
            "install or load the NVIDIA driver (>= 580, guide 2), then rerun",
        )
    if not facts.gpus:
        return Check(
            "nvidia-smi", Status.FAIL, "nvidia-smi lists no GPU", "check the driver and CUDA_VISIBLE_DEVICES"
        )
    names = ", ".join(f"{g.index}: {g.name}" for g in facts.gpus)
    return Check("nvidia-smi", Status.PASS, f"{len(facts.gpus)} GPU(s): {names}")


def check_driver(gpus: list[Gpu], t: Thresholds) -> Check:
    """guide 2: driver >= 580 passes; 535-579 warns (only the cu126 self-build); below fails."""
    drivers = sorted({g.driver for g in gpus})
    majors = [m for m in (driver_major(d) for d in drivers) if m is not None]
    if not majors:
        return Check("driver", Status.FAIL, f"cannot read the driver version ({drivers})", "check nvidia-smi")
    low = min(majors)
    shown = ", ".join(drivers)
    if low >= t.driver_min:
        return Check(
            "driver", Status.PASS, f"{shown} (>= {t.driver_min})", expected=f">= {t.driver_min}", found=shown
        )
    if low >= t.driver_cu126_min:
        return Check(
            "driver",
            Status.WARN,
            f"{shown}: the default stack (torch cu130) needs >= {t.driver_min} "
            "and will not run on this driver",
            f"upgrade the driver to >= {t.driver_min}; or build vLLM yourself against torch cu126 "
            "(verified on A100 "
            "by the guide's authors, not covered by the guide or ocrstack) (guide 2)",
            expected=f">= {t.driver_min}",
            found=shown,
        )
    return Check(
        "driver",
        Status.FAIL,
        f"{shown} is below {t.driver_cu126_min}: neither the cu130 stack nor a cu126 build runs",
        f"upgrade the NVIDIA driver to >= {t.driver_min} (guide 2)",
        expected=f">= {t.driver_min}",
        found=shown,
    )


def check_vram(gpus: list[Gpu], t: Thresholds) -> Check:
    """guide 2/10: at least one GPU with >= 24 GB (10^9 bytes) of memory."""
    sizes = ", ".join(f"{g.index}: {g.total_gb:.1f} GB" if g.total_gb else f"{g.index}: ?" for g in gpus)
    big = [g for g in gpus if g.total_gb is not None and g.total_gb >= t.vram_min_gb]
    if big:
        return Check("vram", Status.PASS, f"{len(big)} GPU(s) >= {t.vram_min_gb:g} GB ({sizes})")
    if all(g.total_gb is None for g in gpus):
        return Check(
            "vram", Status.WARN, "nvidia-smi reports no memory size ([N/A])", "check the GPU memory by hand"
        )
    return Check(
        "vram",
        Status.FAIL,
        f"no GPU has >= {t.vram_min_gb:g} GB ({sizes})",
        f"use a GPU with >= {t.vram_min_gb:g} GB; the RTX 5090 of guide 9 is only "
        "the verification machine (guide 10)",
    )


def pick_gpu(gpus: list[Gpu], apps: list, t: Thresholds) -> Gpu | None:
    """The GPU to use: enough VRAM, fewest compute processes, then least memory in use, then lowest index."""
    big = [g for g in gpus if g.total_gb is None or g.total_gb >= t.vram_min_gb]
    if not big:
        return None
    procs = {g.uuid: sum(1 for a in apps if a.gpu_uuid == g.uuid) for g in big}
    return min(big, key=lambda g: (procs[g.uuid], g.used_mib if g.used_mib is not None else 1 << 30, g.index))


def check_free_gpu(gpus: list[Gpu], apps: list, t: Thresholds) -> Check:
    """guide 2 (``--query-compute-apps``): choose a free GPU; warn when even the best one is busy."""
    gpu = pick_gpu(gpus, apps, t)
    if gpu is None:
        return Check("free-gpu", Status.NOT_RUN, "no GPU with enough memory to choose from")
    mine = [a for a in apps if a.gpu_uuid == gpu.uuid]
    busy = ", ".join(f"pid {a.pid} {a.name} ({_mib(a.used_mib)})" for a in mine)
    detail = f"GPU {gpu.index} ({gpu.name}): {_mib(gpu.used_mib)} of {_mib(gpu.total_mib)} used"
    export = f"export CUDA_VISIBLE_DEVICES={gpu.index}"
    free = gpu.free_fraction
    if free is not None and free < GPU_MEMORY_UTILIZATION:
        return Check(
            "free-gpu",
            Status.WARN,
            f"every GPU is busy; least used is {detail}" + (f" by {busy}" if busy else ""),
            f"free a GPU: vLLM with --gpu-memory-utilization {GPU_MEMORY_UTILIZATION} needs "
            f"{GPU_MEMORY_UTILIZATION:.0%} of it free (guide 8: 'Free memory on device')",
        )
    if mine:
        return Check(
            "free-gpu", Status.WARN, f"{detail}, shared with {busy}", f"{export} (or stop those processes)"
        )
    return Check("free-gpu", Status.PASS, f"{detail}, no compute process -> {export}")


def check_disk(facts: Facts, t: Thresholds) -> Check:
    """guide 2 (``df -h .``): >= 20 GB free where models and builds go."""
    if facts.disk_free_bytes is None:
        return Check("disk", Status.NOT_RUN, f"cannot stat {facts.disk_path}")
    gb = facts.disk_free_bytes / 1e9
    detail = f"{gb:.1f} GB free at {facts.disk_path}"
    if gb >= t.disk_min_gb:
        return Check("disk", Status.PASS, f"{detail} (>= {t.disk_min_gb:g} GB)")
    return Check(
        "disk",
        Status.FAIL,
        f"{detail}, need >= {t.disk_min_gb:g} GB",
        "free space, or put models/builds on another disk (guide 5: run.run_root=<absolute path>)",
    )


def python_requirement(env: str) -> str:
    """Specifier for ``env`` from versions.yaml ``python`` (``"3.13"`` -> ``==3.13.*``)."""
    want = str(versions.pin(f"python.{env}"))
    return want if want[0] in "<>=!~" else f"=={want}.*"


def _satisfies(version: str, spec: str) -> bool:
    from packaging.specifiers import SpecifierSet  # when judged: `preflight --help` needs none
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) in SpecifierSet(spec)
    except InvalidVersion:
        return False


def check_python(env: PythonEnv) -> Check:
    """The environment's interpreter version meets versions.yaml ``python.<env>`` (guide 2)."""
    name = f"python:{env.name}"
    spec = python_requirement(env.name) if env.name in versions.pin("python") else ">=3.10"
    if env.error or env.python is None:
        return Check(
            name, Status.FAIL, f"{env.interpreter} does not run: {env.error}", "recreate the environment"
        )
    ok = _satisfies(env.python, spec)
    return Check(
        name,
        Status.PASS if ok else Status.FAIL,
        f"{env.python} at {env.interpreter} (want {spec})",
        "" if ok else f"recreate it with a matching Python (pixi install -e {env.name}) (guide 2)",
        expected=spec,
        found=env.python,
    )


def check_missing_env(env: str, facts: Facts) -> Check:
    """An environment not created yet: is a suitable Python available to create it?"""
    spec = python_requirement(env)
    name = f"python:{env}"
    if facts.pixi:
        return Check(name, Status.PASS, f"not created yet; pixi ({facts.pixi}) provides Python {spec}")
    for path, version in facts.interpreters_on_path.items():
        if _satisfies(version, spec):
            return Check(
                name, Status.PASS, f"not created yet; {path} (Python {version}) can create it ({spec})"
            )
    return Check(
        name,
        Status.WARN,
        f"not created yet and no Python {spec} on PATH",
        "install pixi (it brings its own Python) or the matching python3.X (guide 2)",
    )


def torch_cuda_major(env: PythonEnv) -> int | None:
    """CUDA major of the env's torch: from torch.version.cuda, else the ``+cuNNN`` local tag."""
    if env.torch_cuda:
        m = re.match(r"(\d+)", env.torch_cuda)
        if m:
            return int(m.group(1))
    if env.torch:
        m = re.search(r"\+cu(\d{2,3})$", env.torch)
        if m:
            return int(m.group(1)[:-1])
    return None


def check_torch_cuda(env: PythonEnv, gpus: list[Gpu], t: Thresholds) -> Check | None:
    """A CUDA 13 torch needs driver >= 580 (guide 2, guide 8 'CUDA driver version is insufficient').

    Returns None when the environment has no torch.
    """
    if not env.torch:
        return None
    name = f"torch-cuda:{env.name}"
    major = torch_cuda_major(env)
    shown = f"torch {env.torch} (CUDA {env.torch_cuda or '?'})"
    if major is None:
        return Check(name, Status.PASS, f"{shown}: CPU-only build, no driver requirement")
    majors = [m for m in (driver_major(g.driver) for g in gpus) if m is not None]
    if not majors:
        return Check(name, Status.NOT_RUN, f"{shown}: no NVIDIA driver here to compare with")
    need = t.driver_min if major >= 13 else CUDA12_DRIVER_MIN if major == 12 else 0
    low = min(majors)
    if low >= need:
        return Check(name, Status.PASS, f"{shown} on driver {low} (needs >= {need})")
    return Check(
        name,
        Status.FAIL,
        f"{shown} needs driver >= {need}, found {low}",
        f"upgrade the driver to >= {need}, or install a torch built for an older CUDA (guide 2: cu126 path)",
        expected=f">= {need}",
        found=str(low),
    )


#: The checks preflight is for (guide 2: GPU, driver, VRAM, a free GPU, disk). One of them not-run
#: (no nvidia-smi here, a disk path that cannot be read) leaves the preflight incomplete, not passed.
REQUIRED = ("nvidia-smi", "driver", "vram", "free-gpu", "disk")
#: What to do when those checks could not run, per check; the GPU ones share one remedy.
_INCOMPLETE_FIX = {
    "gpu": "run `ocrstack preflight` on the GPU host that will serve the model (the report above "
    "lists what was checked here)",
    "disk": "pass --disk-path an existing directory on the disk that will hold models and builds",
}


class PreflightReport(Report):
    """The preflight report: ``ok`` also needs every :data:`REQUIRED` check to have run.

    A not-run check is still reported as not-run with its reason (guide 10: never counted as
    passed); it only means this preflight proved nothing about that requirement, so it cannot pass.
    """

    def incomplete(self) -> list[Check]:
        """The required checks that could not run, in report order."""
        return [c for c in self.checks if c.name in REQUIRED and c.status is Status.NOT_RUN]

    @property
    def ok(self) -> bool:
        """True when no check failed and every required check ran."""
        return super().ok and not self.incomplete()

    def raise_if_incomplete(self) -> None:
        """Raise :class:`CheckFailed` naming the required checks that could not run, and the fix.

        Raises:
            CheckFailed: a required check is not-run (exit 1); the message lists them with the reason.
        """
        missing = self.incomplete()
        if not missing:
            return
        names = ", ".join(c.name for c in missing)
        causes = [c for c in missing if c.name in ("nvidia-smi", "disk")] or missing
        reasons = "; ".join(dict.fromkeys(c.detail for c in causes if c.detail))
        fixes = dict.fromkeys(_INCOMPLETE_FIX["disk" if c.name == "disk" else "gpu"] for c in missing)
        raise CheckFailed(
            f"preflight incomplete: could not check {names}" + (f" ({reasons})" if reasons else ""),
            "; ".join(fixes),
        )


def evaluate(facts: Facts, t: Thresholds | None = None, *, require_gpu: bool = False) -> PreflightReport:
    """Return the preflight report (order: GPU, driver, VRAM, free GPU, disk, Pythons, torch vs driver)."""
    t = t or Thresholds.from_pins()
    report = PreflightReport("ocrstack preflight (guide 2)")
    smi = report.add(check_smi(facts, require_gpu))
    if smi.status is Status.PASS:
        report.add(check_driver(facts.gpus, t))
        report.add(check_vram(facts.gpus, t))
        report.add(check_free_gpu(facts.gpus, facts.apps, t))
    else:
        why = "no working nvidia-smi (see the nvidia-smi check)"
        for name in ("driver", "vram", "free-gpu"):
            report.add(Check(name, Status.NOT_RUN, why))
    report.add(check_disk(facts, t))
    for env in facts.envs:
        report.add(check_python(env))
    for env in facts.missing_envs:
        report.add(check_missing_env(env, facts))
    for env in facts.envs:
        c = check_torch_cuda(env, facts.gpus, t)
        if c is not None:
            report.add(c)
    return report
