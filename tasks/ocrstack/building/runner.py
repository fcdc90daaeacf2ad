"""Run a :class:`~ocrstack.building.steps.Plan`: one log file per step, skip done steps, doctor on failure.

For each step, in order:

1. evaluate its done-check in the target environment; if it holds, skip (``skipped``);
2. run ``argv`` with the step's environment, all output to ``LOG_DIR/NN-<step>.log``
   (the file starts with the command and the variables set);
3. non-zero exit: run the doctor (:mod:`ocrstack.doctor`, every rule) and the known-harmless
   list on the log, print both, raise :class:`StepFailed` (exit 8);
4. success: re-evaluate the done-check (a step that "succeeded" without reaching its
   state fails), report known-harmless warnings (guide 3.2) found in the log.

A rerun therefore resumes at the first step that is not done. ``summary.json`` in the
log directory records the outcome of the last run.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ocrstack import doctor
from ocrstack.building import harmless
from ocrstack.building.steps import DistCondition, DoneCheck, Plan, Step
from ocrstack.core import proc
from ocrstack.core.errors import StepFailed

_VERSIONS = (
    "import importlib.metadata as m, json, sys\n"
    "out = {}\n"
    "for d in json.loads(sys.argv[1]):\n"
    "    try:\n"
    "        out[d] = m.version(d)\n"
    "    except m.PackageNotFoundError:\n"
    "        out[d] = None\n"
    "print(json.dumps(out))\n"
)


@dataclass
class StepOutcome:
    """What happened to one step: ``status`` is skipped | ran | failed; ``log`` its file."""

    name: str
    status: str
    detail: str = ""
    log: str | None = None
    seconds: float = 0.0
    harmless: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


def installed_versions(python: str, dists: list[str]) -> dict[str, str | None]:
    """Versions of ``dists`` installed for interpreter ``python`` (runs it once; read-only)."""
    done = proc.run([python, "-c", _VERSIONS, json.dumps(dists)], capture=True, check=False, echo=False)
    if done.returncode != 0:
        return dict.fromkeys(dists)
    return json.loads(done.stdout)


def condition_holds(cond: DistCondition, found: str | None) -> bool:
    """True when ``found`` (an installed version or None) satisfies ``cond``."""
    if found is None:
        return False
    if cond.op == "contains":
        return cond.value in found
    try:
        return Version(found) in SpecifierSet(cond.value, prereleases=True)
    except InvalidVersion:
        return False


def evaluate(
    done: DoneCheck,
    python: str,
    *,
    lookup: Callable[[str, list[str]], Mapping[str, str | None]] = installed_versions,
    command_ok: Callable[[tuple[str, ...]], bool] | None = None,
) -> tuple[bool, str]:
    """Return ``(is_done, why)`` for a done-check; ``lookup``/``command_ok`` are injectable for tests."""
    if done.never:
        return False, "always runs"
    if done.dists:
        found = lookup(python, [d.dist for d in done.dists])
        for cond in done.dists:
            if not condition_holds(cond, found.get(cond.dist)):
                return False, f"{cond.describe()} not met (found {found.get(cond.dist) or 'nothing'})"
    for f in done.files:
        if not Path(f).exists():
            return False, f"{f} missing"
    if done.command:
        ok = (
            command_ok(done.command)
            if command_ok
            else (proc.run(list(done.command), capture=True, check=False, echo=False).returncode == 0)
        )
        if not ok:
            return False, f"`{' '.join(done.command)}` fails"
    return True, done.describe()


def step_env(step: Step, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The full environment of ``step``: ``base`` (default: os.environ) + its variables + PATH prefix.

    ``PYTHONPATH`` from the step is put in front of an inherited one instead of replacing it.
    """
    env = dict(os.environ if base is None else base)
    for k, v in step.env.items():
        if k == "PYTHONPATH" and env.get(k):
            env[k] = v + os.pathsep + env[k]
        else:
            env[k] = v
    if step.path_prepend:
        env["PATH"] = os.pathsep.join([*step.path_prepend, env.get("PATH", "")])
    return env


def log_name(index: int, step: Step) -> str:
    """``NN-<step name>.log`` with characters unsafe in file names replaced."""
    return f"{index:02d}-{re.sub(r'[^A-Za-z0-9._-]+', '_', step.name)}.log"


def _write_summary(log_dir: Path, plan: Plan, outcomes: list[StepOutcome]) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    tmp = log_dir / ".summary.json.tmp"
    tmp.write_text(
        json.dumps(
            {"plan": plan.title, "python": plan.python, "steps": [asdict(o) for o in outcomes]}, indent=2
        )
        + "\n",
        encoding="utf-8",
    )
    os.replace(tmp, log_dir / "summary.json")


def run_plan(
    plan: Plan,
    log_dir: Path,
    *,
    evaluate_fn: Callable[[DoneCheck, str], tuple[bool, str]] = evaluate,
    execute: Callable[..., object] = proc.run,
    out=None,
) -> list[StepOutcome]:
    """Run ``plan`` step by step (module docstring). Returns the outcomes of all steps.

    Raises:
        StepFailed: a step exited non-zero, or its done-check still fails after it ran;
            the message names the step and its log, the remedy is the doctor's first fix
            (or, when no rule matched, to read the log).
    """
    out = out or sys.stderr
    log_dir.mkdir(parents=True, exist_ok=True)
    outcomes: list[StepOutcome] = []
    total = len(plan.steps)
    for i, step in enumerate(plan.steps, 1):
        is_done, why = evaluate_fn(step.done, plan.python)
        if is_done:
            print(f"[{i}/{total}] {step.name}: already done ({why}), skipped", file=out, flush=True)
            outcomes.append(StepOutcome(step.name, "skipped", why))
            continue
        log = log_dir / log_name(i, step)
        log.unlink(missing_ok=True)
        header = [f"# step {i}/{total}: {step.name}: {step.title}"]
        header += [f"# env {k}={v}" for k, v in proc.redact_env(step.env).items()]
        if step.path_prepend:
            header.append(f"# PATH prefix {os.pathsep.join(step.path_prepend)}")
        if step.cwd:
            header.append(f"# cwd {step.cwd}")
        log.write_text("\n".join(header) + "\n", encoding="utf-8")
        print(f"[{i}/{total}] {step.name}: {step.title} (log: {log})", file=out, flush=True)
        start = time.monotonic()
        result = execute(list(step.argv), env=step_env(step), cwd=step.cwd, log=log, check=False)
        seconds = round(time.monotonic() - start, 1)
        rc = getattr(result, "returncode", 1)
        text = log.read_text(encoding="utf-8", errors="replace")
        hits = harmless.scan(text)
        outcome = StepOutcome(
            step.name,
            "ran",
            f"exit {rc}",
            str(log),
            seconds,
            [f"{h.rule.id} (line {h.line_no})" for h in hits],
        )
        outcomes.append(outcome)
        if rc != 0:
            findings = doctor.diagnose(text)
            outcome.status = "failed"
            outcome.findings = [f"{f.rule_id} (line {f.line_no})" for f in findings]
            print(f"[{i}/{total}] {step.name}: FAILED with exit code {rc} after {seconds} s", file=out)
            print(doctor.render(findings, str(log)), file=out)
            if hits:
                print(harmless.render(hits), file=out)
            _write_summary(log_dir, plan, outcomes)
            remedy = (
                findings[0].fix
                if findings
                else (f"read {log}; fix the cause and rerun the same command (done steps are skipped)")
            )
            raise StepFailed(
                f"build step {i}/{total} '{step.name}' failed with exit code {rc}; log: {log}",
                remedy,
                returncode=rc,
            )
        if step.verify_after and not step.done.never:
            ok, why_not = evaluate_fn(step.done, plan.python)
            if not ok:
                outcome.status = "failed"
                outcome.detail = f"exit 0 but {why_not}"
                _write_summary(log_dir, plan, outcomes)
                raise StepFailed(
                    f"build step {i}/{total} '{step.name}' exited 0 but {why_not}; log: {log}",
                    f"read {log}; the step did not reach its expected state",
                )
        print(f"[{i}/{total}] {step.name}: ok ({seconds} s)", file=out, flush=True)
        if hits:
            print(harmless.render(hits), file=out)
    _write_summary(log_dir, plan, outcomes)
    return outcomes
