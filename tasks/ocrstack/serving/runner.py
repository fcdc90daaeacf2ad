"""``ocrstack serve``: plan, preflight, launch, wait until ready, and the restart policy.

Restart policy (guide 4.4; guide 8 row "CUDA graph capture 超时或被 SIGTERM"): when a start
fails (timeout or the process died) while a restart phase is open (CUDA graph capture) or a
restart doctor rule matched (``cuda-graph-capture-stalled``), the server is stopped and
started again once with the same command (the compile cache now exists); if that fails the
same way, once more with the profile's ``--enforce-eager``. Any other failure stops at once
with the diagnosis. Both the phases and the rule ids are data in ``serve_profiles.yaml``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ocrstack.backends.profiles import RestartPolicy
from ocrstack.client.readiness import Outcome, wait_ready
from ocrstack.serving import plan as plan_mod
from ocrstack.serving import process
from ocrstack.serving.options import ServeOptions
from ocrstack.serving.plan import LaunchPlan


@dataclass
class Attempt:
    """One launch: the extra flags used, its pid and how the wait ended."""

    extra: tuple[str, ...]
    pid: int
    outcome: Outcome | None


@dataclass
class ServeResult:
    """What ``serve`` did: the plan, each attempt, and the final outcome (ready or not)."""

    plan: LaunchPlan
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def pid(self) -> int:
        """Pid of the running (last) server."""
        return self.attempts[-1].pid


def restartable(out: Outcome, policy: RestartPolicy) -> bool:
    """True when a failed start qualifies for the guide 4.4 restart (see module docstring)."""
    if out.ready or out.reason not in ("died", "timeout"):
        return False
    if out.phase is not None and out.phase in policy.phases:
        return True
    return any(f.rule_id in policy.doctor_rules for f in out.findings)


def _log_size(lp: LaunchPlan) -> int:
    try:
        return lp.log_file.stat().st_size
    except OSError:
        return 0


def serve(
    opts: ServeOptions,
    say: Callable[[str], None] | None = None,
    probe: Callable[[str, str, float], Any] | None = None,
    interval: float = 1.0,
) -> ServeResult:
    """Start the server for ``opts`` and (unless ``opts.wait`` is False) wait until it is ready.

    The GPU is ``opts.gpu``, else the freest one (:func:`ocrstack.serving.plan.plan`); the log
    doctor explains fatal log lines and drives the restart rules
    (:func:`ocrstack.client.readiness.wait_ready`).

    Returns:
        :class:`ServeResult`; the server keeps running (stop it with :func:`ocrstack.serving.process.stop`).
    Raises:
        ConfigError: build mismatch, missing files, no GPU for vLLM, port in use.
        ServerUnreachable / ServerRejected: not ready (after the restart policy); the server
            is stopped and its pid file removed; the message carries the doctor diagnosis.
    """
    say = say or process.say
    lp = plan_mod.plan(opts)
    process.preflight(lp)
    for note in lp.notes:
        say(note)
    result = ServeResult(lp)
    policy = lp.pset.restart
    extra: tuple[str, ...] = ()
    plain_restarts = 0
    while True:
        offset = _log_size(lp)
        t0 = time.monotonic()
        popen = process.start(lp, extra)
        say(f"started pid {popen.pid}; log {lp.log_file}")
        if not opts.wait:
            result.attempts.append(Attempt(extra, popen.pid, None))
            return result
        try:
            out = wait_ready(
                lp.url,
                lp.served_model,
                timeout=opts.timeout,
                log=lp.log_file,
                log_offset=offset,
                process=popen,
                pset=lp.pset,
                probe=probe,
                interval=interval,
            )
        except KeyboardInterrupt:  # never leave a half-started server behind
            say(process.stop_pid(popen.pid, grace=10.0))
            for f in (lp.pid_file, lp.state_file):
                f.unlink(missing_ok=True)
            raise
        result.attempts.append(Attempt(extra, popen.pid, out))
        if out.ready:
            say(f"ready at {lp.url} after {time.monotonic() - t0:.1f} s (model name '{lp.served_model}')")
            return result
        say(f"start failed: {out.detail}")
        if popen.poll() is None:
            say(process.stop_pid(popen.pid, grace=30.0))
        else:
            process.reap(popen.pid)
        eager = lp.profile.enforce_eager_flag
        if opts.restart and restartable(out, policy):
            if plain_restarts < policy.max_plain_restarts:
                plain_restarts += 1
                say("restarting once with the same command (guide 4.4: the compile cache now exists)")
                continue
            if eager and eager not in extra and eager not in lp.argv:
                extra = (*extra, eager)
                say(f"restarting with {eager} (guide 4.4)")
                continue
        for f in (lp.pid_file, lp.state_file):
            f.unlink(missing_ok=True)
        out.raise_for_failure()


def print_result(res: ServeResult) -> None:
    """One summary block on stdout: url, model name to pass to parse, pid, log, attempts."""
    lp = res.plan
    print(f"url: {lp.url}")
    print(f"model: {lp.served_model}")
    print(f"pid: {res.pid}  (stop: ocrstack serve stop --port {lp.port} --run-dir {lp.run_dir})")
    print(f"log: {lp.log_file}")
    for i, a in enumerate(res.attempts, 1):
        how = "not waited" if a.outcome is None else f"{a.outcome.reason} in {a.outcome.seconds:.1f} s"
        flags = f" with {' '.join(a.extra)}" if a.extra else ""
        print(f"attempt {i}{flags}: pid {a.pid}, {how}")
    sys.stdout.flush()
