"""Plan, start and stop a recognition server from a profile (guide 4).

* :func:`plan` turns :class:`ServeOptions` into a :class:`LaunchPlan`: the exact argument
  list, the environment (``CUDA_HOME``/``PATH`` for the vLLM venv as guide 4 does in every
  new shell, ``CUDA_VISIBLE_DEVICES`` from ``--gpu`` or the freest GPU), the detected server
  build and the log / pid / state files. Nothing is started; ``serve --dry-run`` prints it.
* :func:`preflight` refuses a profile/build mismatch and a port already in use before launch.
* :func:`start` spawns the server in its own session (``ocrstack.core.proc.spawn``), output to the
  log file, and writes the pid file and a JSON state file atomically.
* :func:`stop` stops it by pid (SIGTERM to its process group, SIGKILL after a grace period),
  after checking that the pid still runs the command that was recorded.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import shlex
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ocrstack import versions
from ocrstack.core import proc
from ocrstack.core.errors import ConfigError, ServerUnreachable, StepFailed, UsageError
from ocrstack.preflight.nvidia import GPU_QUERY, parse_gpus
from ocrstack.serving import profiles as profiles_mod
from ocrstack.serving.profiles import Profile, ProfileSet

DEFAULT_RUN_DIR = Path(".ocrstack") / "serve"


@dataclass(frozen=True)
class ServeOptions:
    """Everything ``ocrstack serve`` needs (defaults here only; the CLI fills them).

    Attributes:
        profile: profile name from the profiles file.
        profiles_file: profiles YAML (default: the packaged ``serve_profiles.yaml``).
        vars: placeholder overrides (``model``, ``draft_model``, ``port``, ``host``,
            ``served_model_name``, ``gguf``, ``mmproj``); None values are ignored.
        venv: the server's environment directory (default: :func:`default_env`).
        gpu: value for CUDA_VISIBLE_DEVICES; None = the freest GPU (nvidia-smi).
        build: declared server build; None = detect from the environment.
        run_dir: where ``serve-<port>.{log,pid,json}`` go.
        offline: set HF_HUB_OFFLINE=1 and HF_HUB_DISABLE_UPDATE_CHECK=1.
        extra_args: appended to the profile's arguments verbatim.
        timeout: readiness timeout in seconds (default: versions.yaml serve.first-start-seconds).
        wait: wait until ready after launch.
        restart: apply the guide 4.4 restart policy.
    """

    profile: str
    profiles_file: Path | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    venv: Path | None = None
    gpu: str | None = None
    build: str | None = None
    run_dir: Path = DEFAULT_RUN_DIR
    offline: bool = False
    extra_args: tuple[str, ...] = ()
    timeout: float | None = None
    wait: bool = True
    restart: bool = True


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


# --------------------------------------------------------------------------- environment


def site_packages(venv: Path) -> Path | None:
    """Return ``venv/lib/pythonX.Y/site-packages`` (first match) or None."""
    found = sorted(venv.glob("lib/python3*/site-packages"))
    return found[0] if found else None


def cuda_home(venv: Path) -> Path:
    """Guide 4: ``$VIRTUAL_ENV/lib/pythonX.Y/site-packages/nvidia/cu<major>`` (major from versions.yaml).

    When the venv does not exist yet, X.Y is versions.yaml ``python.vllm-build``.
    """
    sp = site_packages(venv) or venv / "lib" / f"python{versions.pin('python.vllm-build')}" / "site-packages"
    return sp / "nvidia" / f"cu{versions.pin('torch.cuda_major')}"


def toolchain_nvcc(home: Path) -> Path | None:
    """Return the executable ``nvcc`` that belongs to CUDA_HOME ``home``, or None.

    Looked for at ``$CUDA_HOME/bin/nvcc`` (NVIDIA installer; the pip ``nvidia/cu13`` tree of
    guide 3.2), then, for conda-forge's layout where CUDA_HOME is ``$PREFIX/targets/<triplet>``
    (headers and libs) and the compiler is ``$PREFIX/bin/nvcc``, at ``<home>/../../bin/nvcc``
    (shared/docs/PIXI-NOTES.md; conda-forge cuda-nvcc).
    """
    found = [home / "bin" / "nvcc"]
    if home.parent.name == "targets":
        found.append(home.parent.parent / "bin" / "nvcc")
    return next((c for c in found if c.is_file() and os.access(c, os.X_OK)), None)


def freest_gpu(query: Callable[[], str | None] | None = None) -> tuple[str | None, str]:
    """Return ``(index, reason)`` of the GPU with the least memory used (guide 2 "找一张空闲卡").

    ``query`` returns the output of ``nvidia-smi --query-gpu=... --format=csv``
    (:data:`ocrstack.preflight.nvidia.GPU_QUERY`, parsed by its ``parse_gpus``) or None when
    nvidia-smi is absent; default: run it. Index None means no usable GPU; ``reason`` says why.
    """
    text = (query or _nvidia_smi_query)()
    if text is None:
        return None, "no NVIDIA GPU found (nvidia-smi not on PATH)"
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "no output")
    try:
        gpus = parse_gpus(text)
    except ValueError:
        gpus = []
    if not gpus:
        if first.startswith("index"):
            return None, "nvidia-smi listed no GPUs"
        return None, f"nvidia-smi failed: {first[:160]}"
    g = min(gpus, key=lambda g: (g.used_mib if g.used_mib is not None else float("inf"), g.index))
    return str(g.index), f"GPU {g.index} ({g.name}) is the freest ({g.used_mib}/{g.total_mib} MiB used)"


def _nvidia_smi_query() -> str | None:
    if proc.which("nvidia-smi") is None:
        return None
    res = proc.run(GPU_QUERY, capture=True, check=False, echo=False, timeout=30)
    return res.stdout if res.returncode == 0 else (res.stdout + res.stderr)


# --------------------------------------------------------------------------- builds


def _dist_version(dist: str, sp: Path | None) -> str | None:
    if sp is None:
        return versions.installed(dist)
    for d in md.distributions(path=[str(sp)]):
        if (d.metadata["Name"] or "").lower().replace("_", "-") == dist:
            return d.version
    return None


def detect_build(
    profile: Profile, pset: ProfileSet, venv: Path | None, env: Mapping[str, str]
) -> tuple[str | None, str]:
    """Return ``(build id or None, detail)`` for the server environment a profile would run in.

    vLLM: the installed ``vllm`` version in the venv's site-packages; a version carrying the
    feat-ocr commit (versions.yaml ``vllm.fork-commit``, setuptools-scm local part) is
    ``feat-ocr``, versions.yaml ``upstream.vllm`` is ``upstream``. transformers: the fork
    version (``transformers.fork-version``) or >= 5.21 (first release with ``minicpm_ocr``,
    versions.yaml ``upstream.transformers``). llama.cpp: ``llama-server`` on the PATH.
    Metadata is read from disk; nothing is imported or run.
    """
    engine = pset.builds[profile.build].engine
    sp = site_packages(venv) if venv is not None and venv.is_dir() else None
    where = f"in {sp}" if sp else ("in this interpreter" if venv is None else f"({venv} does not exist)")
    if venv is not None and sp is None and engine in ("vllm", "transformers"):
        return None, f"environment {venv} not found"
    if engine == "vllm":
        ver = _dist_version("vllm", sp)
        if ver is None:
            return None, f"vllm not installed {where}"
        commit = str(versions.pin("vllm.fork-commit"))
        if commit[:7] in ver:
            return "feat-ocr", f"vllm {ver} {where}"
        if ver == str(versions.pin("upstream.vllm")):
            return "upstream", f"vllm {ver} {where}"
        return None, f"vllm {ver} {where} is neither the feat-ocr build ({commit}) nor upstream"
    if engine == "transformers":
        ver = _dist_version("transformers", sp)
        if ver is None:
            return None, f"transformers not installed {where}"
        fork = str(versions.pin("transformers.fork-version"))
        try:
            ok = ver == fork or Version(ver) in SpecifierSet(str(versions.pin("upstream.transformers")))
        except InvalidVersion:
            ok = False
        if ok:
            return "transformers", f"transformers {ver} {where}"
        need = f"{fork} or {versions.pin('upstream.transformers')}"
        return None, f"transformers {ver} {where} has no minicpm_ocr (need {need})"
    if engine == "llama.cpp":
        exe = proc.which(profile.program[0], env)
        return ("llama.cpp", exe) if exe else (None, f"{profile.program[0]} not on PATH")
    return profile.build, f"engine '{engine}' is not checked"


# --------------------------------------------------------------------------- plan


def default_env(profile: Profile) -> Path | None:
    """The server environment when ``--venv`` is not given.

    Order: the guide's directory (``./vllm-ocr-env``, ``./tf-ocr-env``; guide 3) when it
    exists; else the active environment (``$VIRTUAL_ENV``, then ``$CONDA_PREFIX`` as set by
    ``pixi run``); else this interpreter's venv (``sys.prefix`` when it is a venv, e.g.
    ``/path/env/bin/ocrstack`` run without activation); else the guide's directory (absent:
    the plan notes it). None for profiles without an environment (llama.cpp).
    """
    if not profile.venv_default:
        return None
    guide_dir = Path(profile.venv_default)
    if guide_dir.is_dir():
        return guide_dir
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(var):
            return Path(os.environ[var])
    if sys.prefix != sys.base_prefix:
        return Path(sys.prefix)
    return guide_dir


def _loopback(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "", "::") else host


def plan(opts: ServeOptions, gpu_query: Callable[[], str | None] | None = None) -> LaunchPlan:
    """Resolve ``opts`` into a :class:`LaunchPlan` without starting anything.

    Raises:
        UsageError: unknown profile, bad placeholder, or a port that is not an integer.
        ConfigError: the profiles file is invalid.
    """
    pset = profiles_mod.load(opts.profiles_file)
    profile = pset.get(opts.profile)
    values = profile.variables(opts.vars)
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

    # vLLM and SGLang (MinerU-Diffusion's LowConfidence diffusion decoding) need a GPU
    gpu_required = profile.gpu and pset.builds[profile.build].engine in ("vllm", "sglang")
    if profile.gpu:
        if opts.gpu is not None:
            env_set["CUDA_VISIBLE_DEVICES"] = str(opts.gpu)
        else:
            idx, why = freest_gpu(gpu_query)
            notes.append(why)
            if idx is not None:
                env_set["CUDA_VISIBLE_DEVICES"] = idx
            elif not gpu_required:
                notes.append(f"{profile.name} runs on the CPU here")
    if opts.offline:
        env_set["HF_HUB_OFFLINE"] = "1"
        env_set["HF_HUB_DISABLE_UPDATE_CHECK"] = "1"
    env.update(env_set)

    argv = profile.argv(opts.vars, tuple(opts.extra_args))
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
        served_model=profile.served_model(opts.vars),
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
            flags the found build does not accept (e.g. ``--trust-request-mm-kwargs`` on
            upstream vLLM).
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


def port_in_use(host: str, port: int) -> bool:
    """True when ``host:port`` cannot be bound (another process listens there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = "127.0.0.1") -> int:
    """Return a port the OS reports free on ``host`` (for tests and ad-hoc servers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def preflight(lp: LaunchPlan) -> None:
    """Checks before launch: build matches, files exist, GPU present for vLLM, port free.

    Raises:
        ConfigError: build mismatch, missing model files, no GPU for a vLLM profile,
            or the port is in use (the message names our pid file when it is ours).
    """
    check_build(lp)
    check_files(lp)
    if lp.gpu_required and "CUDA_VISIBLE_DEVICES" not in lp.env_set:
        reason = next((n for n in lp.notes if "GPU" in n), "no GPU found")
        raise ConfigError(
            f"profile '{lp.profile.name}' needs an NVIDIA GPU: {reason}",
            "run on a GPU host (guide 2), pass --gpu N, or use --profile tf on CPU",
        )
    if port_in_use(lp.host, lp.port):
        pid = read_pid(lp.pid_file)
        owner = f" by pid {pid} (ours: {lp.pid_file}; `ocrstack serve stop --port {lp.port}`)" if pid else ""
        raise ConfigError(
            f"port {lp.port} on {lp.host} is already in use{owner}",
            "stop that server or choose another --port",
        )


def check_files(lp: LaunchPlan) -> None:
    """Raise ConfigError when a required model file/directory (``required-files``) is missing."""
    for var in lp.profile.required_files:
        p = Path(lp.values[var])
        if not p.exists():
            raise ConfigError(
                f"{var.replace('_', ' ')} not found: {p}", f"download it (guide 3.4) or pass --set {var}=PATH"
            )


# --------------------------------------------------------------------------- start / stop


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_pid(pid_file: Path) -> int | None:
    """Return the pid in ``pid_file`` when that process is alive, else None."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def pid_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def start(lp: LaunchPlan, extra: tuple[str, ...] = ()) -> Any:
    """Spawn the server (own session, output appended to the log) and write pid + state files.

    Returns the ``subprocess.Popen``. ``extra`` is appended to the argv (restart policy).
    """
    argv = lp.argv + list(extra)
    lp.run_dir.mkdir(parents=True, exist_ok=True)
    with lp.log_file.open("a", encoding="utf-8") as fh:
        fh.write(
            f"# ocrstack serve {lp.profile.name} at {time.strftime('%Y-%m-%dT%H:%M:%S')}: "
            f"{proc.quote(argv)}\n"
        )
    popen = proc.spawn(argv, env=lp.env, log=lp.log_file)
    _atomic_write(lp.pid_file, f"{popen.pid}\n")
    state = {
        "pid": popen.pid,
        "profile": lp.profile.name,
        "argv": proc.redact_argv(argv),
        "url": lp.url,
        "port": lp.port,
        "served_model": lp.served_model,
        "log": str(lp.log_file.absolute()),
        "started": time.time(),
        "speculative": lp.profile.speculative,
    }
    _atomic_write(lp.state_file, json.dumps(state, indent=2) + "\n")
    return popen


def read_state(run_dir: Path, port: int) -> dict[str, Any] | None:
    """Return the state written by :func:`start` for ``port`` or None."""
    try:
        return json.loads((Path(run_dir) / f"serve-{port}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def stop_pid(pid: int, grace: float = 30.0, expect_args: list[str] | None = None) -> str:
    """Stop process ``pid`` and its process group: SIGTERM, then SIGKILL after ``grace`` seconds.

    ``expect_args``: when given, the pid's /proc cmdline must contain these arguments (so a
    recycled pid is never killed). Returns a one-line account of what happened.

    Raises:
        StepFailed: the process survived SIGKILL.
        ConfigError: the pid now runs a different command.
    """
    if not pid_alive(pid):
        return f"pid {pid} is not running"
    if expect_args:
        cmd = _cmdline(pid)
        if cmd is not None and not all(a in cmd for a in expect_args):
            raise ConfigError(
                f"pid {pid} no longer runs the recorded server ({' '.join(cmd[:4])} ...)",
                "remove the stale pid file; stop the process yourself if it is yours",
            )

    def signal_group(sig: int) -> None:
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except ProcessLookupError:
            pass

    signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(pid)
        if not pid_alive(pid):
            return f"stopped pid {pid} (SIGTERM)"
        time.sleep(0.2)
    signal_group(signal.SIGKILL)
    for _ in range(50):
        _reap(pid)
        if not pid_alive(pid):
            return f"killed pid {pid} (SIGKILL after {grace:.0f} s)"
        time.sleep(0.1)
    raise StepFailed(f"pid {pid} survived SIGKILL", "check `ps -o pid,stat,cmd -p PID`")


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop(run_dir: Path, port: int, grace: float = 30.0) -> str:
    """``ocrstack serve stop``: stop the server recorded for ``port`` in ``run_dir`` by its pid.

    Removes the pid and state files afterwards. Raises ServerUnreachable when nothing is recorded.
    """
    run_dir = Path(run_dir)
    pid_file = run_dir / f"serve-{port}.pid"
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError) as exc:
        raise ServerUnreachable(
            f"no pid file {pid_file}: no server started by ocrstack on port {port}",
            "pass the --port (and --run-dir) used with `ocrstack serve`",
        ) from exc
    state = read_state(run_dir, port) or {}
    argv = state.get("argv") or []
    expect = [a for a in argv[1:] if "***" not in a][-3:] if argv else None
    msg = stop_pid(pid, grace, expect_args=expect)
    for f in (pid_file, run_dir / f"serve-{port}.json"):
        f.unlink(missing_ok=True)
    return msg


def say(msg: str) -> None:
    """Progress line on stderr."""
    print(f"ocrstack serve: {msg}", file=sys.stderr, flush=True)
