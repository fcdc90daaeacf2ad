"""Process control for ``ocrstack serve``: preflight, start, stop, pid and state files, reaping.

* :func:`preflight` refuses a profile/build mismatch and a port already in use before launch.
* :func:`start` spawns the server in its own session (``ocrstack.core.proc.spawn``), output to
  the log file, and writes the pid file and a JSON state file atomically.
* :func:`stop` stops it by pid (SIGTERM to its process group, SIGKILL after a grace period),
  after checking that the pid still runs the command that was recorded; :func:`reap` collects
  an exited child so it does not linger as a zombie.

The plan itself (argv, environment, files) is :mod:`ocrstack.serving.plan`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from ocrstack.core import proc
from ocrstack.core.errors import ConfigError, ServerUnreachable, StepFailed
from ocrstack.serving.plan import LaunchPlan, check_build, check_files


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
        reap(pid)
        if not pid_alive(pid):
            return f"stopped pid {pid} (SIGTERM)"
        time.sleep(0.2)
    signal_group(signal.SIGKILL)
    for _ in range(50):
        reap(pid)
        if not pid_alive(pid):
            return f"killed pid {pid} (SIGKILL after {grace:.0f} s)"
        time.sleep(0.1)
    raise StepFailed(f"pid {pid} survived SIGKILL", "check `ps -o pid,stat,cmd -p PID`")


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is an exited child of this process (no zombie); else no-op."""
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
