"""Wait until a server can really answer, watching its log while waiting (guide 4.4, 8).

Ready means: ``/health`` answers and one tiny real chat request with the expected model
name succeeds (:func:`ocrstack.client.probe.probe`, shared with ``parse``). Some
servers list ``/v1/models`` before warm-up, and ``transformers serve`` lists nothing there
for a local path and answers 400 "Server is pinned to ..." to any other model name, so the
model list is never trusted on its own.

While waiting, the server log (when known) is read incrementally:

* a known fatal line ends the wait at once with the diagnosis of the log doctor
  (:mod:`ocrstack.doctor`, its ``serve`` rules);
* long silent phases (weights loading, torch.compile, FlashInfer JIT, CUDA graph capture;
  regexes in ``serve_profiles.yaml``, passed in as ``pset``) are reported as such, not as a hang;
* the server process dying ends the wait with its exit status and the diagnosis.

Between probes the wait is ``interval`` seconds, or the server's ``Retry-After`` when a probe
got a 429 (the shared rule of :mod:`ocrstack.core.retry`). The default timeout is versions.yaml
``serve.first-start-seconds`` (guide 4.4: the first start takes about 3 minutes).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocrstack import doctor, versions
from ocrstack.client.probe import probe as default_probe
from ocrstack.core import retry
from ocrstack.core.errors import ServerRejected, ServerUnreachable

#: The doctor rules that apply to a server log (``stage`` in doctor_rules.yaml).
LOG_STAGES = ("serve",)


def default_timeout() -> float:
    """Seconds to wait for a first start: versions.yaml ``serve.first-start-seconds`` (guide 4.4)."""
    return float(versions.pin("serve.first-start-seconds"))


@dataclass
class Outcome:
    """How a wait ended.

    Attributes:
        ready: the server answered the tiny request.
        reason: ``ready`` | ``fatal-log`` | ``died`` | ``timeout`` | ``rejected``.
        detail: one line for the user.
        seconds: time waited.
        phase: the start-up phase open when the wait ended (None if none).
        findings: doctor findings in the watched log.
        returncode: the server's exit status when it died (negative = signal).
        probe: the probe result when ready.
        error: the ServerRejected raised by the probe (reason ``rejected``).
    """

    ready: bool
    reason: str
    detail: str
    seconds: float
    phase: str | None = None
    findings: list[doctor.Finding] = field(default_factory=list)
    returncode: int | None = None
    probe: Any = None
    error: Any = None

    def diagnosis(self) -> str:
        """The doctor findings rendered as text (:func:`ocrstack.doctor.render`; '' when none)."""
        return doctor.render(self.findings) if self.findings else ""

    def raise_for_failure(self) -> None:
        """Raise ServerRejected (a 4xx answer) or ServerUnreachable when not ready; no-op when ready."""
        if self.ready:
            return
        diag = self.diagnosis()
        fix = (
            self.findings[0].fix
            if self.findings
            else ("read the server log; `ocrstack doctor LOGFILE` diagnoses known errors")
        )
        msg = self.detail + (
            f" [{self.findings[0].rule_id}: {self.findings[0].cause}]" if self.findings else ""
        )
        if diag:
            print(diag, file=sys.stderr)
        if self.reason == "rejected":
            err = self.error
            raise ServerRejected(msg, err.remedy if err is not None else fix, getattr(err, "status", None))
        raise ServerUnreachable(msg, fix)


class LogWatcher:
    """Reads a growing log file from ``offset`` on; tracks phases and doctor findings.

    Args:
        path: the server log (may not exist yet).
        phases: start-up phases (``backends.profiles.Phase``: ``name``, ``start`` and ``end`` regexes).
        offset: byte offset to start from (earlier attempts' output is ignored).
        ignore_rules: doctor rule ids that are phases, not fatal, while the process lives
            (``cuda-graph-capture-stalled`` matches during a normal capture).
    """

    def __init__(
        self,
        path: Path | None,
        phases: tuple[Any, ...],
        offset: int = 0,
        ignore_rules: tuple[str, ...] = (),
    ) -> None:
        self.path = path
        self.phases = phases
        self.offset = offset
        self.ignore_rules = set(ignore_rules)
        self.text = ""
        self.phase: str | None = None
        self.phase_since = 0.0
        self.last_growth = time.monotonic()
        self.last_line = ""
        self._partial = ""

    def poll(self) -> list[str]:
        """Read new complete lines; update phase, last line and growth time. Returns the new lines."""
        if self.path is None:
            return []
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return []
        if not data:
            return []
        self.offset += len(data)
        self.last_growth = time.monotonic()
        chunk = self._partial + data.decode("utf-8", errors="replace")
        *lines, self._partial = chunk.split("\n")
        self.text += "".join(ln + "\n" for ln in lines)
        for line in lines:
            if line.strip():
                self.last_line = line.strip()[-200:]
            for ph in self.phases:
                if self.phase == ph.name and ph.end.search(line):
                    self.phase = None
                elif self.phase != ph.name and ph.start.search(line):
                    self.phase, self.phase_since = ph.name, time.monotonic()
        return lines

    def findings(self, fatal_only: bool = True) -> list[doctor.Finding]:
        """Doctor findings (:data:`LOG_STAGES` rules) in the text read so far.

        ``fatal_only`` drops the ignored rules (``ignore_rules``).
        """
        if not self.text:
            return []
        found = doctor.diagnose(self.text + self._partial, stages=LOG_STAGES)
        if fatal_only:
            found = [f for f in found if f.rule_id not in self.ignore_rules]
        return found


def _pid_running(pid: int) -> bool:
    """True while ``pid`` exists. The pid comes from a state file, so the server is not our
    child: once it exits its parent (or init) reaps it, and no zombie check is needed."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_ready(
    url: str,
    model: str,
    *,
    timeout: float | None = None,
    log: Path | None = None,
    log_offset: int = 0,
    process: Any = None,
    pid: int | None = None,
    pset: Any = None,
    interval: float = 1.0,
    request_timeout: float = 60.0,
    silence_report: float = 30.0,
    say: Callable[[str], None] | None = None,
    probe: Callable[[str, str, float], Any] | None = None,
) -> Outcome:
    """Poll ``url`` until the tiny request with ``model`` succeeds, or a reason to stop.

    Args:
        url: server base URL, e.g. ``http://127.0.0.1:18499``.
        model: the model name the server must accept (served model name; for
            ``transformers serve`` the path it was started with).
        timeout: seconds (default :func:`default_timeout`).
        log, log_offset: server log to watch, from this byte offset.
        process: a ``subprocess.Popen`` of the server (liveness + exit status), or
        pid: a pid to watch instead (server started by another ocrstack process).
        pset: profiles (``backends.profiles.ProfileSet``) for phases and the doctor rules that are
            phases while the process lives; None: no phases.
        interval: seconds between probes.
        request_timeout: seconds for each tiny request.
        silence_report: report the current phase after this many seconds of log silence.
        say: progress printer (default: stderr).
        probe: ``(url, model, timeout) -> result``; raises ServerUnreachable (keep waiting) or
            ServerRejected (stop: a 4xx will not heal). Default: :func:`ocrstack.client.probe.probe`.
    Returns:
        :class:`Outcome` (never raises for "not ready"; call ``raise_for_failure``).
    """
    say = say or (lambda m: print(f"ocrstack wait-ready: {m}", file=sys.stderr, flush=True))
    probe = probe or default_probe
    phases = tuple(pset.phases) if pset is not None else ()
    ignore = tuple(pset.restart.doctor_rules) if pset is not None else ()
    timeout = default_timeout() if timeout is None else timeout
    watcher = LogWatcher(log, phases, log_offset, ignore)
    pause = interval
    start = time.monotonic()
    last_report = start
    last_error = "no answer yet"

    def outcome(ready: bool, reason: str, detail: str, **kw: Any) -> Outcome:
        return Outcome(
            ready,
            reason,
            detail,
            time.monotonic() - start,
            watcher.phase,
            kw.pop("findings", None) or watcher.findings(fatal_only=False),
            **kw,
        )

    while True:
        watcher.poll()
        fatal = watcher.findings()
        if fatal:
            f = fatal[0]
            return outcome(
                False,
                "fatal-log",
                f"server log line {f.line_no} is a known fatal error: {f.line}",
                findings=fatal,
            )
        rc = None
        if process is not None:
            rc = process.poll()
        elif pid is not None and not _pid_running(pid):
            rc = -1
        if rc is not None:
            watcher.poll()
            if process is None:
                how = f"pid {pid} is gone"
            elif rc < 0 and -rc in signal.valid_signals():
                how = f"killed by {signal.Signals(-rc).name}"
            else:
                how = f"exit status {rc}"
            where = f" during {watcher.phase}" if watcher.phase else ""
            last = f"; last log line: {watcher.last_line}" if watcher.last_line else ""
            return outcome(
                False, "died", f"server process ended ({how}){where} before it was ready{last}", returncode=rc
            )
        try:
            result = probe(url, model, request_timeout)
            return outcome(True, "ready", f"ready after {time.monotonic() - start:.1f} s", probe=result)
        except ServerRejected as exc:
            return outcome(False, "rejected", exc.message, error=exc)
        except ServerUnreachable as exc:
            last_error = exc.message
            transient = retry.find_transient(exc)
            wait = transient.retry_after if transient is not None else None
            pause = interval if wait is None else max(interval, wait)
        now = time.monotonic()
        if now - start >= timeout:
            where = f" (still in phase: {watcher.phase})" if watcher.phase else ""
            return outcome(
                False, "timeout", f"not ready after {timeout:.0f} s{where}; last error: {last_error}"
            )
        silent = now - watcher.last_growth
        if now - last_report >= silence_report:
            last_report = now
            if watcher.phase:
                say(
                    f"{watcher.phase} in progress for {now - watcher.phase_since:.0f} s "
                    f"(log silent {silent:.0f} s); this phase is slow on a first start, not a hang"
                )
            else:
                last = watcher.last_line or "-"
                say(f"waiting {now - start:.0f} s of {timeout:.0f} s; last log line: {last}")
        time.sleep(min(pause, max(0.0, timeout - (now - start))))
