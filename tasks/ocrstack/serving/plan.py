"""The pure part of ``ocrstack serve``: a profile and options in, a :class:`LaunchPlan` out (guide 4).

* :func:`plan` turns :class:`ServeOptions` into a :class:`LaunchPlan`: the exact argument
  list, the environment (``CUDA_HOME``/``PATH`` for the vLLM venv as guide 4 does in every
  new shell, ``CUDA_VISIBLE_DEVICES`` from ``--gpu`` or the freest GPU, :func:`ocrstack.gpu.freest`),
  the detected server build and the log / pid / state files. Nothing is started; this is
  what ``serve --dry-run`` prints. It reads the disk (profiles, installed versions) and asks
  nvidia-smi for the GPUs (unless the caller hands it the answer), and nothing else.
* :func:`server_argv` is a profile's server command alone (what a container runs; the
  Kubernetes renderer uses it).
* :func:`check_build` / :func:`check_files` are the plan's own refusals.

Process control (start, stop, pid and state files, the port check) is
:mod:`ocrstack.serving.process`, like ``building/plan.py`` + ``building/runner.py``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocrstack import gpu
from ocrstack.backends import profiles as profiles_mod
from ocrstack.backends.profiles import Profile, ProfileSet
from ocrstack.core import proc
from ocrstack.core.errors import ConfigError, UsageError
from ocrstack.serving.environment import cuda_home, default_env, detect_build, toolchain_nvcc
from ocrstack.serving.options import ServeOptions


@dataclass
class LaunchPlan:
    """A fully resolved launch: what ``serve --dry-run`` prints and ``start`` runs.

    Attributes:
        argv: exact argument list (program resolved on the server PATH when found).
        env: complete child environment.
        env_set: the variables this plan sets or changes (for display; secrets redacted on print).
        url: ``http://HOST:PORT`` the server will answer on (loopback for 0.0.0.0).
        served_model: model name clients must send.
        build: detected (or declared) build id; None when it could not be determined.
        notes: human-readable remarks (no GPU, build undetected, ...).
    """

    profile: Profile
    pset: ProfileSet
    argv: list[str]
    env: dict[str, str]
    env_set: dict[str, str]
    host: str
    port: int
    url: str
    served_model: str
    venv: Path | None
    build: str | None
    build_detail: str
    run_dir: Path
    values: dict[str, str] = field(default_factory=dict)
    env_shown: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    gpu_required: bool = False

    @property
    def log_file(self) -> Path:
        """``<run_dir>/serve-<port>.log`` (appended across restarts)."""
        return self.run_dir / f"serve-{self.port}.log"

    @property
    def pid_file(self) -> Path:
        """``<run_dir>/serve-<port>.pid``."""
        return self.run_dir / f"serve-{self.port}.pid"

    @property
    def state_file(self) -> Path:
        """``<run_dir>/serve-<port>.json``: pid, argv, url, served model, log path."""
        return self.run_dir / f"serve-{self.port}.json"

    def render(self) -> str:
        """Text shown by ``serve --dry-run``: environment, shell-quoted command, files, notes."""
        desc, source = self.profile.description, self.profile.source
        # descriptions usually cite their guide section already ("... (guide 4.1)"): name it once
        head = desc if not source or source in desc else f"{desc} ({source})"
        lines = [f"# profile {self.profile.name}: {head}"]
        found = self.build or "unknown"
        lines.append(f"# build: {self.profile.build} required; found: {found} ({self.build_detail})")
        lines.append("# environment:")
        for k, v in proc.redact_env({**self.env_set, **self.env_shown}).items():
            lines.append(f"{k}={v if k == 'PATH' else shlex.quote(v)}")
        lines.append("# command:")
        lines.append(proc.quote(self.argv))
        lines.append(f"# url: {self.url}  served model name: {self.served_model}")
        lines.append(f"# log: {self.log_file}  pid file: {self.pid_file}")
        lines.extend(f"# note: {n}" for n in self.notes)
        return "\n".join(lines)


# --------------------------------------------------------------------------- plan


def _loopback(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "", "::") else host


def plan(opts: ServeOptions, gpus: gpu.GpuScan | None = None) -> LaunchPlan:
    """Resolve ``opts`` into a :class:`LaunchPlan` without starting anything.

    When the profile wants a GPU and ``opts.gpu`` is None, the freest GPU of ``gpus`` is used
    (:func:`ocrstack.gpu.freest`; the plan notes why, or why none); ``gpus`` None asks
    nvidia-smi now (:func:`ocrstack.gpu.scan`), tests hand in a recorded answer.

    Raises:
        UsageError: unknown profile, bad placeholder, or a port that is not an integer.
        ConfigError: the profiles file is invalid.
    """
    pset = profiles_mod.load(opts.profiles_file)
    profile = pset.get(opts.profile)
    overrides = opts.placeholders()
    values = profile.variables(overrides)
    try:
        port = int(values["port"])
    except ValueError as exc:
        raise UsageError(f"--port must be an integer, got {values['port']!r}", "e.g. --port 8000") from exc
    # vLLM's api_server binds all interfaces when no --host is given (guide 4.1/4.2 pass none).
    host = values.get("host", "0.0.0.0")
    notes: list[str] = []
    env = dict(os.environ)
    env_set: dict[str, str] = {}
    shown: dict[str, str] = {}

    venv = opts.venv if opts.venv is not None else default_env(profile)
    if venv is not None:
        venv = venv.absolute()
        if not venv.is_dir():
            notes.append(f"server environment {venv} does not exist (guide 3 creates it; or pass --venv)")
        path = [str(venv / "bin")]
        env_set["VIRTUAL_ENV"] = str(venv)
        if profile.cuda_env:  # guide 4: otherwise "Could not find nvcc" on first start
            cu = cuda_home(venv)
            kept = env.get("CUDA_HOME")
            nvcc = toolchain_nvcc(Path(kept)) if kept else None
            # the guide's pip toolchain wins when it has nvcc; PyPI torch's cu13 wheels create
            # nvidia/cu13/lib without one, which must not hide a conda/pixi nvcc
            if toolchain_nvcc(cu) is None and kept and nvcc is not None:
                # a conda/pixi toolchain (pixi.toml cuda-toolchain activation) already set it
                why = "not found" if not cu.is_dir() else "has no nvcc"
                notes.append(f"{cu} {why}; keeping CUDA_HOME={kept} from the environment (nvcc: {nvcc})")
                if not Path(kept).is_dir():
                    notes.append(f"CUDA_HOME {kept} does not exist (CUDA headers are expected under it)")
                shown["CUDA_HOME"] = kept
                nvcc_dir = nvcc.parent
            else:
                env_set["CUDA_HOME"] = str(cu)
                if not cu.is_dir():
                    notes.append(f"CUDA_HOME {cu} does not exist (install the pip CUDA toolchain, guide 3.2)")
                elif toolchain_nvcc(cu) is None:
                    notes.append(
                        f"CUDA_HOME {cu} has no executable bin/nvcc (pip nvidia-cuda-nvcc, guide 3.2)"
                    )
                nvcc_dir = cu / "bin"
            if str(nvcc_dir) not in path:
                path.append(str(nvcc_dir))
        env_set["PATH"] = os.pathsep.join(path + [env.get("PATH", "")])
        shown["PATH"] = os.pathsep.join(path + ["$PATH"])

    # e.g. vLLM and SGLang (MinerU-Diffusion's LowConfidence diffusion decoding) need a GPU
    gpu_required = profile.gpu and pset.backend(profile).gpu_required
    if profile.gpu:
        if opts.gpu is not None:
            env_set["CUDA_VISIBLE_DEVICES"] = str(opts.gpu)
        else:
            idx, why = gpu.freest(gpu.scan() if gpus is None else gpus)
            notes.append(why)
            if idx is not None:
                env_set["CUDA_VISIBLE_DEVICES"] = idx
            elif not gpu_required:
                notes.append(f"{profile.name} runs on the CPU here")
    if opts.offline:
        env_set["HF_HUB_OFFLINE"] = "1"
        env_set["HF_HUB_DISABLE_UPDATE_CHECK"] = "1"
    env.update(env_set)

    argv = profile.argv(overrides, tuple(opts.extra_args))
    if venv is not None:
        exe = str(venv / "bin" / argv[0]) if (venv / "bin" / argv[0]).is_file() else None
    else:
        exe = proc.which(argv[0], env)
    if exe:
        argv[0] = exe
    else:
        notes.append(f"'{argv[0]}' not found in {venv / 'bin' if venv else 'PATH'}")

    if opts.build is not None:
        if opts.build not in pset.builds:
            known = ", ".join(pset.builds)
            raise UsageError(f"unknown build '{opts.build}'", f"use --build with one of: {known}")
        build, detail = opts.build, "declared with --build"
    else:
        build, detail = detect_build(profile, pset, venv, env)
    return LaunchPlan(
        profile=profile,
        pset=pset,
        argv=argv,
        env=env,
        env_set=env_set,
        host=host,
        port=port,
        url=f"http://{_loopback(host)}:{port}",
        served_model=profile.served_model(overrides),
        venv=venv,
        build=build,
        build_detail=detail,
        run_dir=Path(opts.run_dir),
        values=values,
        env_shown=shown,
        notes=notes,
        gpu_required=gpu_required,
    )


def check_build(lp: LaunchPlan, allow_unknown: bool = False) -> None:
    """Refuse a profile whose target build differs from the server environment's build.

    ``allow_unknown=True`` (``serve --dry-run``) lets an undetected build pass, so the
    command can be printed on a machine without the server installed; a known mismatch
    (detected, or declared with ``--build``) is refused either way.

    Raises:
        ConfigError: build unknown (unless allowed), or a mismatch; the message names the
            profile's build and the found one (a feat-ocr profile on upstream vLLM 0.33.0,
            an upstream profile on the feat-ocr build).
    """
    want = lp.profile.build
    if lp.build == want or (lp.build is None and allow_unknown):
        return
    if lp.build is None:
        raise ConfigError(
            f"cannot tell which server build profile '{lp.profile.name}' would run on: {lp.build_detail}",
            f"install the {want} build ({lp.pset.builds[want].description}) and pass --venv, "
            f"or declare it with --build {want}",
        )
    found = lp.pset.builds[lp.build]
    bad = [f for f in found.unknown_flags if f in lp.argv]
    flags = f"; {found.id} does not accept {', '.join(bad)}" if bad else ""
    fits = [n for n, p in lp.pset.profiles.items() if p.build == found.id]
    fits.sort(key=lambda n: lp.pset.profiles[n].speculative != lp.profile.speculative)  # the twin first
    written = f"a profile written for {found.id}" + (f" (--profile {' / '.join(fits)})" if fits else "")
    raise ConfigError(
        f"profile '{lp.profile.name}' targets the {want} build but the environment has {found.id} "
        f"({lp.build_detail}){flags}",
        f"use the {want} environment ({lp.pset.builds[want].description}) with --venv, or {written}",
    )


def check_files(lp: LaunchPlan) -> None:
    """Raise ConfigError when a required model file/directory (``required-files``) is missing."""
    for var in lp.profile.required_files:
        p = Path(lp.values[var])
        if not p.exists():
            raise ConfigError(
                f"{var.replace('_', ' ')} not found: {p}", f"download it (guide 3.4) or pass --set {var}=PATH"
            )


def server_argv(
    profile: str,
    vars: Mapping[str, Any] | None = None,
    extra: tuple[str, ...] = (),
    profiles_file: Path | None = None,
) -> list[str]:
    """A profile's server command: program name first, placeholders filled, ``extra`` appended.

    The program is not resolved against a venv or PATH (a container image has it on its PATH),
    and no environment, GPU or build is looked at. ``vars`` overrides placeholders like
    ``ServeOptions.placeholders()``; the defaults come from the profiles file and versions.yaml
    (``serve.port``, ``serve.served-model-name``).

    Raises:
        UsageError: unknown profile or a placeholder without a value.
        ConfigError: the profiles file is invalid.
    """
    return profiles_mod.load(profiles_file).get(profile).argv(vars or {}, tuple(extra))
