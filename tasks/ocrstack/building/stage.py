"""The ``ocrstack build`` stage: probe the host, build the plan, preflight, run (or print with --dry-run).

Probing (read-only): host memory and cores (MAX_JOBS), ccache, the CUDA toolkit
(``--cuda-home`` > conda-forge ``$CONDA_PREFIX/targets/x86_64-linux`` > ``$CUDA_HOME`` > the pip
wheels of ``--python``, installed and fixed up by the plan), host compilers
(``--cc/--cxx`` > ``$CC/$CXX`` > ``gcc-13``/``g++-13`` > ``gcc``/``g++``).
Read-only checks (also with ``--dry-run``): pinned commits, the target interpreter
(:mod:`ocrstack.building.target`). Preflight (real runs only): those, then the ``--deps``
directories or the GitHub probe.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ocrstack import versions
from ocrstack.building import offline, plan, resources, runner, sources, steps, target
from ocrstack.building.options import BuildOptions, PrebuiltOptions, TfOptions
from ocrstack.core import proc
from ocrstack.core.errors import CheckFailed, ConfigError, OcrstackError
from ocrstack.core.results import Report
from ocrstack.toolchain import locate

_PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def _compiler(
    explicit: str | None, env_value: str | None, preferred: str, fallback: str, path: str | None
) -> str:
    if explicit:
        return explicit
    if env_value:
        return env_value
    return preferred if proc.which(preferred, {"PATH": path or ""}) else fallback


def resolve_toolchain(opts: BuildOptions, env: Mapping[str, str] | None = None) -> steps.Toolchain:
    """Find CUDA_HOME and the host compilers for the build (see the module docstring).

    Pip kind: ``CUDA_HOME`` = ``<purelib of --python>/nvidia/cu13`` (guide 3.2 ``$CU``), whether
    or not the wheels are installed yet (the plan installs them).
    """
    env = os.environ if env is None else env
    path = env.get("PATH")
    cc = _compiler(opts.cc, env.get("CC"), "gcc-13", "gcc", path)
    cxx = _compiler(opts.cxx, env.get("CXX"), "g++-13", "g++", path)
    host = opts.cxx or env.get("CUDAHOSTCXX") or cxx
    if opts.cuda_home:
        return steps.Toolchain("given", str(opts.cuda_home), cc, cxx, host)
    conda = locate.conda_cuda_home(env)
    if conda is not None:
        return steps.Toolchain("conda", str(conda), cc, cxx, host)
    if env.get("CUDA_HOME"):
        return steps.Toolchain("env", env["CUDA_HOME"], cc, cxx, host)
    done = proc.run([str(opts.python), "-c", _PURELIB], capture=True, check=False, echo=False)
    if done.returncode == 0 and done.stdout.strip():
        cu = Path(done.stdout.strip()) / "nvidia" / f"cu{locate.cuda_major()}"
        return steps.Toolchain("pip", str(cu), cc, cxx, host)
    return steps.Toolchain("missing", None, cc, cxx, host)


def make_vllm_plan(opts: BuildOptions) -> steps.Plan:
    """Probe the host and return the source-build plan (read-only)."""
    toolchain = resolve_toolchain(opts)
    env_jobs = os.environ.get("MAX_JOBS")
    override = opts.max_jobs if opts.max_jobs is not None else (int(env_jobs) if env_jobs else None)
    jobs, reason = resources.max_jobs(resources.probe(), override)
    if opts.max_jobs is None and env_jobs:
        reason = "from $MAX_JOBS"
    full = plan.vllm_plan(
        opts,
        toolchain,
        jobs,
        jobs_reason=reason,
        ccache=resources.find_ccache(),
        patches=sources.list_patches(opts.patches_dir),
    )
    return full.slice(opts.from_step, opts.to_step)


def check_sources(opts: BuildOptions) -> None:
    """The pinned-commit checks (read-only ``git rev-parse``); prints the report to stderr.

    Raises:
        CheckFailed: a checkout is not at its pinned commit (without ``--allow-other-commit``).
        InputError: a source directory is missing or is not the project's checkout.
    """
    report = sources.check_sources(opts.src, opts.transformers_src, opts.allow_other_commit)
    print(report.to_text(), file=sys.stderr)
    if not report.ok:
        bad = next(c for c in report.checks if c.status.value == "fail")
        raise CheckFailed(f"{bad.name}: {bad.detail}", bad.fix)


def read_only_checks(opts: BuildOptions) -> None:
    """Checks that change nothing, run by ``--dry-run`` as by a real build: sources, then the target.

    Raises:
        CheckFailed / InputError: see :func:`check_sources`.
        ConfigError: the target interpreter misses ``python.vllm-build`` or holds SDK packages
            (:mod:`ocrstack.building.target`; ``--allow-other-python`` overrides).
    """
    check_sources(opts)
    target.require_target(opts.python, "vllm-build", opts.allow_other_python)


def compile_will_run(p: steps.Plan, evaluate_fn=None) -> tuple[bool, str]:
    """Will the runner execute ``compile-vllm``, the only step that fetches dependencies?

    False when the step is not in the (sliced) plan or its done-check already holds (the
    runner would skip it: vLLM from the pinned commit installed, the extension file built).
    ``evaluate_fn`` defaults to :func:`ocrstack.building.runner.evaluate` (reads the target
    environment; nothing is changed). Returns ``(will_run, why)``.
    """
    if "compile-vllm" not in p.names():
        return False, "compile-vllm is not in this plan"
    try:
        done, why = (evaluate_fn or runner.evaluate)(p.step("compile-vllm").done, p.python)
    except OcrstackError as exc:  # e.g. the target interpreter cannot run: assume it compiles
        return True, f"cannot evaluate compile-vllm's done-check ({exc.message})"
    return (False, f"compile-vllm already done ({why})") if done else (True, why)


def preflight(opts: BuildOptions, p: steps.Plan) -> None:
    """Checks before step 1 of a real build.

    The ``--deps`` directories and the GitHub probe are checked only when the compile step
    will actually run (:func:`compile_will_run`), so a rerun or ``--from transformers-fork``
    works on an offline host.

    Raises:
        CheckFailed: a checkout is not at its pinned commit (without ``--allow-other-commit``).
        InputError: a source dir or an offline ``--deps`` directory is missing.
        ConfigError: wrong target interpreter, no CUDA toolkit, or GitHub unreachable without ``--deps``.
    """
    read_only_checks(opts)
    compiles, why = compile_will_run(p)
    if not compiles:
        print(f"{why}: no --deps / GitHub check needed", file=sys.stderr)
    elif opts.deps is not None:
        offline.require_deps(opts.deps)
    elif opts.network_check:
        offline.preflight_network(opts.network_timeout)
    if "NO CUDA TOOLKIT" in " ".join(p.preflight):
        raise ConfigError(
            f"no CUDA toolkit found for {opts.python}",
            "pass --cuda-home, run in `pixi run -e vllm-build`, or use the pip wheels (guide 3.2)",
        )


def build_vllm(opts: BuildOptions, as_json: bool = False) -> int:
    """``ocrstack build vllm``: print the plan (``dry_run``) or preflight and run it. Returns 0.

    ``--dry-run`` prints the plan, then runs the read-only checks (:func:`read_only_checks`)
    and refuses exactly as the real run would.

    Raises:
        StepFailed: a step failed (the doctor's diagnosis was printed).
        CheckFailed / InputError / ConfigError: a preflight check refused (see :func:`preflight`).
    """
    p = make_vllm_plan(opts)
    if opts.dry_run:
        print(p.to_json() if as_json else p.render(), flush=True)
        read_only_checks(opts)
        return 0
    print(p.render(), file=sys.stderr)
    preflight(opts, p)
    runner.run_plan(p, opts.log_dir)
    print(f"vLLM built from {opts.src}; logs in {opts.log_dir}", file=sys.stderr)
    return 0


def install_prebuilt(opts: PrebuiltOptions, as_json: bool = False) -> int:
    """``ocrstack build vllm-prebuilt``: vllm from PyPI, transformers override, assertions. Returns 0.

    The target interpreter is checked first (``python.vllm`` pin, no SDK packages), also with ``--dry-run``.

    Raises:
        ConfigError: wrong target interpreter (``--allow-other-python`` overrides).
        StepFailed: a step failed.
    """
    p = plan.prebuilt_plan(opts)
    if opts.dry_run:
        print(p.to_json() if as_json else p.render(), flush=True)
        target.require_target(opts.python, "vllm", opts.allow_other_python)
        return 0
    target.require_target(opts.python, "vllm", opts.allow_other_python)
    runner.run_plan(p, opts.log_dir)
    print(f"vllm {versions.pin('upstream.vllm')} installed; logs in {opts.log_dir}", file=sys.stderr)
    return 0


def build_tf(opts: TfOptions, as_json: bool = False) -> int:
    """``ocrstack build tf``: the guide 3.3 transformers environment (:func:`plan.tf_plan`). Returns 0.

    Read-only checks first, also with ``--dry-run`` (after the plan is printed): the
    transformers checkout at ``transformers.fork-commit``, the target interpreter
    (``python.tf``, no SDK packages). Then the shared runner executes the plan.

    Raises:
        CheckFailed / InputError: the checkout is missing or at another commit.
        ConfigError: wrong target interpreter (``--allow-other-python`` overrides).
        StepFailed: a step failed (the doctor's diagnosis was printed).
    """
    p = plan.tf_plan(opts, sources.list_patches(opts.patches_dir))
    if opts.dry_run:
        print(p.to_json() if as_json else p.render(), flush=True)
    else:
        print(p.render(), file=sys.stderr)
    report = Report("source checkout (pin: transformers.fork-commit)")
    report.add(sources.check_source("transformers", opts.transformers_src, opts.allow_other_commit))
    print(report.to_text(), file=sys.stderr)
    report.raise_if_failed("source check")
    target.require_target(opts.python, "tf", opts.allow_other_python)
    if opts.dry_run:
        return 0
    runner.run_plan(p, opts.log_dir)
    print(
        f"feat-ocr transformers[serving] installed from {opts.transformers_src}; logs in {opts.log_dir}",
        file=sys.stderr,
    )
    return 0
