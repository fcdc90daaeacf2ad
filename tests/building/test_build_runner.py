"""The plan runner: per-step logs, skipping done steps, post-conditions, doctor and harmless on the logs."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ocrstack.building import runner
from ocrstack.building.steps import DistCondition, DoneCheck, Plan, Step
from ocrstack.core.errors import StepFailed
from ocrstack.doctor import load_rules


def plan_of(*steps: Step) -> Plan:
    return Plan("test plan", "/env/bin/python", tuple(steps))


class FakeExec:
    """Stands in for proc.run: appends scripted output to the step's log, returns an exit code."""

    def __init__(self, script: dict[str, tuple[int, str]]) -> None:
        self.script = script
        self.calls: list[dict] = []

    def __call__(self, argv, *, env, cwd, log, check):
        name = argv[-1]
        self.calls.append({"argv": argv, "env": env, "cwd": cwd, "log": log})
        rc, text = self.script.get(name, (0, ""))
        with log.open("a") as fh:
            fh.write(text)
        return SimpleNamespace(returncode=rc)


def test_skips_done_steps_and_logs_each_step(tmp_path: Path) -> None:
    done = DoneCheck((DistCondition("torch", "spec", "==2.14.0+cu130"),))
    p = plan_of(
        Step("a", "first", ("x", "a"), done=done),
        Step("b", "second", ("x", "b"), env={"MAX_JOBS": "4"}),
        Step("c", "third", ("x", "c")),
    )
    ex = FakeExec({"b": (0, "built b\n"), "c": (0, "built c\n")})
    outcomes = runner.run_plan(
        p, tmp_path, evaluate_fn=lambda d, py: (not d.never, "because"), execute=ex, out=io.StringIO()
    )
    assert [o.status for o in outcomes] == ["skipped", "ran", "ran"]
    assert [c["argv"][-1] for c in ex.calls] == ["b", "c"]
    log_b = (tmp_path / "02-b.log").read_text()
    assert log_b.startswith("# step 2/3: b: second\n# env MAX_JOBS=4\n") and "built b" in log_b
    assert ex.calls[0]["env"]["MAX_JOBS"] == "4"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [s["status"] for s in summary["steps"]] == ["skipped", "ran", "ran"]


def test_failure_runs_the_doctor_and_stops(tmp_path: Path) -> None:
    log_text = (
        "-- Populating cutlass\n"
        "CMake Error at cutlass-subbuild/cutlass-populate-prefix/tmp/"
        "cutlass-populate-gitclone.cmake:31 (message):\n"
        "  Failed to clone repository: 'https://github.com/nvidia/cutlass.git'\n"
    )
    p = plan_of(
        Step("compile-vllm", "compile", ("x", "compile-vllm")), Step("after", "never reached", ("x", "after"))
    )
    ex = FakeExec({"compile-vllm": (1, log_text)})
    out = io.StringIO()
    with pytest.raises(StepFailed) as err:
        runner.run_plan(p, tmp_path, evaluate_fn=lambda d, py: (False, ""), execute=ex, out=out)
    rule = next(r for r in load_rules() if r.id == "cutlass-clone-failed")
    assert err.value.remedy == rule.fix
    assert err.value.returncode == 1 and "01-compile-vllm.log" in err.value.message
    assert "[cutlass-clone-failed]" in out.getvalue()
    assert [c["argv"][-1] for c in ex.calls] == ["compile-vllm"]  # stopped
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["steps"][0]["status"] == "failed" and summary["steps"][0]["findings"][0].startswith(
        "cutlass-clone-failed"
    )


def test_oom_log_diagnosed(tmp_path: Path) -> None:
    log_text = "[312/904] Building CUDA object ...\nFAILED: [code=9] CMakeFiles/_C.dir/csrc/attention.cu.o\n"
    p = plan_of(Step("compile-vllm", "compile", ("x", "compile-vllm")))
    out = io.StringIO()
    with pytest.raises(StepFailed) as err:
        runner.run_plan(
            p,
            tmp_path,
            evaluate_fn=lambda d, py: (False, ""),
            execute=FakeExec({"compile-vllm": (1, log_text)}),
            out=out,
        )
    assert "MAX_JOBS" in err.value.remedy
    assert "compile-killed-code9" in out.getvalue()


def test_unknown_failure_points_at_the_log(tmp_path: Path) -> None:
    p = plan_of(Step("s", "t", ("x", "s")))
    out = io.StringIO()
    with pytest.raises(StepFailed) as err:
        runner.run_plan(
            p,
            tmp_path,
            evaluate_fn=lambda d, py: (False, ""),
            execute=FakeExec({"s": (2, "something new\n")}),
            out=out,
        )
    assert "01-s.log" in err.value.remedy and err.value.returncode == 2
    assert "doctor: no known error pattern matched" in out.getvalue()


def test_exit_zero_but_state_not_reached_fails(tmp_path: Path) -> None:
    done = DoneCheck((DistCondition("transformers", "spec", "==5.19.0.dev0"),))
    p = plan_of(Step("transformers-fork", "fork", ("x", "transformers-fork"), done=done))
    with pytest.raises(StepFailed, match="exited 0 but transformers==5.19.0.dev0 not met"):
        runner.run_plan(
            p,
            tmp_path,
            evaluate_fn=lambda d, py: runner.evaluate(
                d, py, lookup=lambda _py, dists: {"transformers": "5.19.0"}
            ),
            execute=FakeExec({}),
            out=io.StringIO(),
        )


def test_harmless_warnings_reported_not_failed(tmp_path: Path) -> None:
    text = "WARNING FlashInfer's precompiled kernels are missing or do not match the installed one\nvLLM OK\n"
    p = plan_of(Step("import-vllm", "import", ("x", "import-vllm")))
    out = io.StringIO()
    outcomes = runner.run_plan(
        p,
        tmp_path,
        evaluate_fn=lambda d, py: (False, ""),
        execute=FakeExec({"import-vllm": (0, text)}),
        out=out,
    )
    assert outcomes[0].status == "ran"
    assert outcomes[0].harmless == ["flashinfer-precompiled-kernels-missing (line 2)"]
    assert "harmless [flashinfer-precompiled-kernels-missing]" in out.getvalue()


def test_evaluate_conditions() -> None:
    done = DoneCheck((DistCondition("vllm", "contains", "5c2b92a5d"),), files=("/definitely/not/here.so",))
    lookup = lambda _py, dists: {"vllm": "0.11.1.dev123+g5c2b92a5d.cu130"}  # noqa: E731
    ok, why = runner.evaluate(done, "py", lookup=lookup)
    assert not ok and "here.so missing" in why
    ok, _ = runner.evaluate(DoneCheck(done.dists), "py", lookup=lookup)
    assert ok
    ok, why = runner.evaluate(DoneCheck(done.dists), "py", lookup=lambda _p, d: {"vllm": "0.33.0"})
    assert not ok and "found 0.33.0" in why
    assert runner.evaluate(DoneCheck(), "py") == (False, "always runs")
    cmd = DoneCheck(command=("git", "apply", "--reverse", "--check", "x.patch"))
    assert runner.evaluate(cmd, "py", command_ok=lambda c: True)[0]
    assert not runner.evaluate(cmd, "py", command_ok=lambda c: False)[0]


def test_step_env_prepends_path_and_pythonpath() -> None:
    s = Step(
        "s", "t", ("x",), env={"PYTHONPATH": "/ocrstack", "CUDA_HOME": "/cu"}, path_prepend=("/venv/bin",)
    )
    env = runner.step_env(s, {"PATH": "/usr/bin", "PYTHONPATH": "/old", "HF_TOKEN": "secret"})
    assert env["PATH"] == "/venv/bin:/usr/bin" and env["PYTHONPATH"] == "/ocrstack:/old"
    assert env["CUDA_HOME"] == "/cu" and env["HF_TOKEN"] == "secret"


@pytest.mark.proc
def test_real_processes_resume_after_failure(tmp_path: Path) -> None:
    """Real subprocesses: step 2 fails until a marker exists; the rerun skips step 1 and finishes."""
    marker = tmp_path / "fixed"
    made = tmp_path / "made"
    step1 = Step(
        "make",
        "create a file",
        (sys.executable, "-c", f"open({str(made)!r}, 'w').write('x')"),
        done=DoneCheck(files=(str(made),)),
    )
    step2 = Step(
        "needs-fix",
        "fails until fixed",
        (
            sys.executable,
            "-c",
            f"import os, sys; print('working'); sys.exit(0 if os.path.exists({str(marker)!r}) else 3)",
        ),
    )
    p = Plan("real", sys.executable, (step1, step2))
    with pytest.raises(StepFailed) as err:
        runner.run_plan(p, tmp_path / "logs", out=io.StringIO())
    assert err.value.returncode == 3
    assert "working" in (tmp_path / "logs" / "02-needs-fix.log").read_text()
    marker.write_text("")
    outcomes = runner.run_plan(p, tmp_path / "logs", out=io.StringIO())
    assert [o.status for o in outcomes] == ["skipped", "ran"]


@pytest.mark.proc
def test_installed_versions_reads_the_target_interpreter() -> None:
    found = runner.installed_versions(sys.executable, ["pyyaml", "surely-not-installed-dist"])
    assert found["pyyaml"] and found["surely-not-installed-dist"] is None
