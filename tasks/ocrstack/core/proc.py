"""The one subprocess wrapper.

Every external command goes through :func:`run` (or :func:`spawn` for servers):
argument lists only, never a shell string; the command is echoed shell-quoted
with secrets redacted; a non-zero exit raises :class:`StepFailed` carrying the
return code. Pattern from cibuildwheel ``util/cmd.py`` and nox ``command.py``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ocrstack.core.errors import ConfigError, StepFailed

#: Environment variable names whose values never reach logs or echoed commands.
SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|API_KEY|APIKEY|AUTH)", re.IGNORECASE)
_SECRET_ARG = re.compile(r"^(--(?:api-key|token|hf-token|password)(?:=)?)(.*)$")


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Return a copy of ``env`` with secret-looking values replaced by ``***``."""
    return {k: ("***" if SECRET_NAME.search(k) and v else v) for k, v in env.items()}


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Return ``argv`` with the values of ``--api-key``/``--token``/``--password`` replaced by ``***``."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("***")
            hide_next = False
            continue
        m = _SECRET_ARG.match(arg)
        if m and m.group(2):
            out.append(m.group(1) + "***")
        elif m:
            out.append(arg)
            hide_next = True
        else:
            out.append(arg)
    return out


def quote(argv: Sequence[str]) -> str:
    """Shell-quote an argument list for display (secrets redacted)."""
    return shlex.join(redact_argv([str(a) for a in argv]))


def which(program: str, env: Mapping[str, str] | None = None) -> str | None:
    """Find ``program`` on ``env['PATH']`` (default: this process's PATH)."""
    path = (env or os.environ).get("PATH")
    return shutil.which(program, path=path)


def require(program: str, env: Mapping[str, str] | None = None, hint: str = "") -> str:
    """Return the full path of ``program`` or raise :class:`ConfigError` with ``hint``."""
    found = which(program, env)
    if not found:
        raise ConfigError(f"'{program}' not found on PATH", hint or f"install {program} or add it to PATH")
    return found


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    log: Path | None = None,
    check: bool = True,
    capture: bool = False,
    echo: bool = True,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (a list, never a shell string) and return the completed process.

    Args:
        env: full environment for the child (default: inherit).
        log: if given, stdout+stderr are appended to this file instead of the terminal.
        capture: capture stdout/stderr as text (ignored when ``log`` is given).
        check: raise :class:`StepFailed` on a non-zero exit.
    Raises:
        StepFailed: the command exited non-zero (``returncode`` attribute set).
        ConfigError: the program does not exist.
    """
    args = [os.fspath(a) for a in argv]
    if echo:
        print(f"+ {quote(args)}", file=sys.stderr, flush=True)
    try:
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("a", encoding="utf-8") as fh:
                fh.write(f"+ {quote(args)}\n")
                fh.flush()
                proc = subprocess.run(
                    args, env=env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, text=True, timeout=timeout
                )
        else:
            proc = subprocess.run(args, env=env, cwd=cwd, capture_output=capture, text=True, timeout=timeout)
    except FileNotFoundError as exc:
        raise ConfigError(f"cannot run {args[0]!r}: not found", f"install it or fix PATH ({exc})") from exc
    if check and proc.returncode != 0:
        where = f"; log: {log}" if log else ""
        raise StepFailed(
            f"command failed with exit code {proc.returncode}: {quote(args)}{where}",
            "read the output above (or the log); `ocrstack doctor LOGFILE` diagnoses known errors",
            returncode=proc.returncode,
        )
    return proc


def spawn(
    argv: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    log: Path,
) -> subprocess.Popen[bytes]:
    """Start a long-running process (a server) in its own session, output appended to ``log``.

    The caller owns the process: stop it by pid (see ocrstack.serving).
    """
    args = [os.fspath(a) for a in argv]
    print(f"+ {quote(args)} > {log}", file=sys.stderr, flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    fh = log.open("ab")
    try:
        return subprocess.Popen(
            args,
            env=env,
            cwd=cwd,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise ConfigError(f"cannot run {args[0]!r}: not found", "install it or fix PATH") from exc
    finally:
        fh.close()
