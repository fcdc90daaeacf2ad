"""Build plans: ordered steps, each with its argv, environment and done-check; no side effects.

vLLM from source (guide 3.2), in this order -- the order is the point:

1. ``torch`` / ``torchaudio`` / ``torchvision`` pins from the cu130 index
2. ``transformers`` in the build range (vLLM's build imports it)
3. build tools (``build-tools`` in envs/versions.yaml, in that order)
4. ``ocrstack toolchain check`` (nvcc 13 = torch cu130, host gcc, cuda_fp16.h)
5. patches from ``patches/``: every ``git apply --check`` first, then every apply
6. vLLM editable with ``--no-build-isolation`` (CUDA_HOME, CC/CXX/CUDAHOSTCXX, MAX_JOBS,
   offline ``*_SRC_DIR`` variables, CCACHE_DIR)
7. **then** the feat-ocr transformers ``--no-deps -e`` -- never before step 6: vLLM's
   dependencies would overwrite it (guide 3.2, 8)
8. ``ocrstack versions check --env vllm-build``, run in the target interpreter as
   ``python -m ocrstack.building.assertions --env vllm-build`` (same function, lean imports)
9. ``from vllm import LLM``
10. the built extension ``_C_stable_libtorch.abi3.so`` exists (never ``import vllm._C``, guide 3.2)

Prebuilt upstream: ``vllm==upstream.vllm`` from PyPI (brings its torch pins), then
``transformers`` ``upstream.transformers`` with ``--no-deps`` (vllm pins
``upstream.vllm-transformers-pin``; only newer releases know ``minicpm_ocr``), ``pip check``
allowing only that conflict, ``versions check --env vllm``, ``from vllm import LLM``.

transformers environment (guide 3.3, pixi ``tf``): torch/torchvision cu130, patches of
``patches/transformers``, the feat-ocr transformers ``-e "<TRANSFORMERS_SRC>[serving]"`` *with*
its dependencies (unlike step 7 above: no vLLM here to overwrite it), ``accelerate``,
``versions check --env tf``, and ``minicpm_ocr`` known to transformers' auto classes.

Every version comes from envs/versions.yaml via :func:`ocrstack.versions.pin`.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ocrstack import versions
from ocrstack.building import offline
from ocrstack.building.options import BuildOptions, PrebuiltOptions, TfOptions
from ocrstack.building.sources import Patch
from ocrstack.core import paths


@dataclass(frozen=True)
class DistCondition:
    """``dist`` installed in the target environment and ``op`` holds for its version.

    ``op`` is ``"spec"`` (``value`` is a PEP 440 specifier set, pre-releases allowed,
    e.g. ``"==2.14.0+cu130"``) or ``"contains"`` (``value`` is a substring, e.g. ``g5c2b92a5d``).
    """

    dist: str
    op: str
    value: str

    def describe(self) -> str:
        """``torch==2.14.0+cu130`` or ``vllm version contains g5c2b92a5d``."""
        if self.op == "spec":
            return f"{self.dist}{self.value}" if self.value else f"{self.dist} installed"
        return f"{self.dist} version contains {self.value}"


@dataclass(frozen=True)
class DoneCheck:
    """When a step counts as already done: all ``dists`` hold, all ``files`` exist and
    ``command`` (argv) exits 0. Empty = never done (the step always runs)."""

    dists: tuple[DistCondition, ...] = ()
    files: tuple[str, ...] = ()
    command: tuple[str, ...] = ()

    @property
    def never(self) -> bool:
        """True when the step has no done-check and always runs."""
        return not (self.dists or self.files or self.command)

    def describe(self) -> str:
        """One line for the dry-run output."""
        if self.never:
            return "always runs"
        parts = [d.describe() for d in self.dists]
        parts += [f"file {f} exists" for f in self.files]
        if self.command:
            parts.append(f"`{shlex.join(self.command)}` succeeds")
        return "; ".join(parts)


@dataclass(frozen=True)
class Step:
    """One step of a plan.

    Attributes:
        name: stable id (also the log file name), e.g. ``compile-vllm``.
        title: what and why, with the guide section.
        argv: the command (argument list, never a shell string).
        env: variables set for this step (on top of the inherited environment).
        path_prepend: directories put in front of PATH for this step.
        cwd: working directory (None = inherited).
        done: when the step can be skipped.
        verify_after: re-evaluate ``done`` after a successful run and fail if it does not hold
            (False for pure checks such as ``git apply --check``).
    """

    name: str
    title: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    path_prepend: tuple[str, ...] = ()
    cwd: str | None = None
    done: DoneCheck = DoneCheck()
    verify_after: bool = True


@dataclass(frozen=True)
class Plan:
    """An ordered plan plus the checks the runner does before step 1 and notes for the reader."""

    title: str
    python: str
    steps: tuple[Step, ...]
    preflight: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def names(self) -> list[str]:
        """Step names in order."""
        return [s.name for s in self.steps]

    def slice(self, first: str | None = None, last: str | None = None) -> Plan:
        """The sub-plan from step ``first`` to step ``last`` inclusive (None = from the start / to the end).

        Lets pixi split the build into cached tasks (compile, then the fork install).

        Raises:
            UsageError: an unknown step name (the message lists the valid ones), or ``first`` after ``last``.
        """
        from ocrstack.core.errors import UsageError

        names = self.names()
        for n in (first, last):
            if n is not None and n not in names:
                raise UsageError(f"no step '{n}' in this plan", f"use one of: {', '.join(names)}")
        i = names.index(first) if first else 0
        j = names.index(last) if last else len(names) - 1
        if i > j:
            raise UsageError(f"--from {first} comes after --to {last}", "swap them")
        title = self.title + (f" [steps {names[i]} .. {names[j]}]" if (i, j) != (0, len(names) - 1) else "")
        return Plan(title, self.python, self.steps[i : j + 1], self.preflight, self.notes)

    def step(self, name: str) -> Step:
        """The step called ``name``.

        Raises:
            KeyError: no such step.
        """
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    def to_json(self) -> str:
        """The plan as JSON (``title``, ``python``, ``preflight``, ``notes``, ``steps``)."""
        return json.dumps(asdict(self), indent=2, ensure_ascii=False)

    def render(self) -> str:
        """Text for ``--dry-run``: preflight, then numbered steps with env, cwd, argv, done-check."""
        out = [self.title, f"  python: {self.python}"]
        if self.preflight:
            out.append("preflight (before step 1):")
            out += [f"  - {p}" for p in self.preflight]
        out.append("steps:")
        for i, s in enumerate(self.steps, 1):
            out.append(f"{i:>3}. {s.name}: {s.title}")
            for k, v in s.env.items():
                out.append(f"       env  {k}={v}")
            if s.path_prepend:
                out.append(f"       PATH {os.pathsep.join(s.path_prepend)}:$PATH")
            if s.cwd:
                out.append(f"       cwd  {s.cwd}")
            out.append(f"       $ {shlex.join(s.argv)}")
            out.append(f"       done when: {s.done.describe()}")
        if self.notes:
            out.append("notes:")
            out += [f"  - {n}" for n in self.notes]
        return "\n".join(out)


@dataclass(frozen=True)
class Toolchain:
    """Resolved build toolchain (probed by the caller; plain data here).

    ``kind`` is ``given`` (--cuda-home), ``conda``, ``env`` ($CUDA_HOME), ``pip`` or ``missing``;
    ``cuda_home`` is None when missing. Only ``pip`` adds the wheel install and fix-up steps.
    """

    kind: str
    cuda_home: str | None
    cc: str
    cxx: str
    cudahostcxx: str


def _pip(python: str, *args: str) -> tuple[str, ...]:
    return (python, "-m", "pip", "install", *args)


def ocrstack_env() -> dict[str, str]:
    """``PYTHONPATH`` that makes this ocrstack importable by the target interpreter (``-m ocrstack``)."""
    return {"PYTHONPATH": str(paths.PACKAGE_DIR.parent)}


def _versions_check(py: str, env: str, why: str) -> Step:
    """The ``versions-check`` step: ``ocrstack versions check --env ENV`` run inside the target."""
    return Step(
        "versions-check",
        f"installed versions match envs/versions.yaml {why}",
        (py, "-m", "ocrstack.building.assertions", "--env", env),
        env=ocrstack_env(),
    )


def target_line(python: str, env: str) -> str:
    """The preflight line of the target-interpreter check (:mod:`ocrstack.building.target`)."""
    return (
        f"{python}: Python {versions.pin(f'python.{env}')} (python.{env}), no SDK packages "
        "(--allow-other-python to override; checked with --dry-run too)"
    )


def torch_steps(python: str, names: tuple[str, ...] = ("torch", "torchaudio", "torchvision")) -> list[Step]:
    """Step 1: the cu130 torch wheels ``names`` (guide 3.2: the trio; guide 3.3: torch, torchvision;
    ``torch`` in envs/versions.yaml)."""
    t = versions.pin("torch")
    section = "3.2" if "torchaudio" in names else "3.3"
    return [
        Step(
            "torch",
            f"{'/'.join(names)} from the {t['local'].lstrip('+')} index (guide {section})",
            _pip(python, *(f"{n}=={t[n]}" for n in names), "--index-url", t["index"]),
            done=DoneCheck(tuple(DistCondition(n, "spec", f"=={t[n]}{t['local']}") for n in names)),
        )
    ]


def patch_steps(patches: list[Patch], checkouts: dict[str, str]) -> list[Step]:
    """``git apply --check`` for every patch, then every apply (nothing applied unless all apply).

    ``checkouts`` maps a patch project (``vllm``, ``transformers``) to its checkout; patches of
    other projects are left out (the tf plan has no vLLM checkout).
    """
    mine = [p for p in patches if p.project in checkouts]
    steps = []
    for p in mine:
        target = checkouts[p.project]
        steps.append(
            Step(
                f"patch-check:{p.name}",
                f"git apply --check {p.name} (nothing is applied unless all apply)",
                ("git", "-C", target, "apply", "--check", str(p.path)),
                done=DoneCheck(command=("git", "-C", target, "apply", "--reverse", "--check", str(p.path))),
                verify_after=False,
            )
        )
    for p in mine:
        target = checkouts[p.project]
        steps.append(
            Step(
                f"patch-apply:{p.name}",
                f"apply {p.name}",
                ("git", "-C", target, "apply", str(p.path)),
                done=DoneCheck(command=("git", "-C", target, "apply", "--reverse", "--check", str(p.path))),
            )
        )
    return steps


def build_tool_specs() -> list[str]:
    """``build-tools`` from envs/versions.yaml, in order (guide 3.2)."""
    return [str(s) for s in versions.pin("build-tools")]


def _requirement_condition(spec: str) -> DistCondition:
    from packaging.requirements import Requirement

    req = Requirement(spec)
    return DistCondition(req.name, "spec", str(req.specifier))


def vllm_plan(
    opts: BuildOptions,
    toolchain: Toolchain,
    max_jobs: int,
    *,
    jobs_reason: str = "",
    ccache: str | None = None,
    patches: list[Patch] | None = None,
    runner_python: str | None = None,
) -> Plan:
    """The source-build plan (module docstring) for ``opts``; pure: no file, process or network access.

    Args:
        toolchain: resolved CUDA_HOME and host compilers (see :class:`Toolchain`).
        max_jobs: MAX_JOBS for the compile (see :mod:`ocrstack.building.resources`).
        ccache: path of ccache when present (CCACHE_DIR is set only with ``opts.ccache_dir``).
        patches: from :func:`ocrstack.building.sources.list_patches`.
        runner_python: interpreter that runs ocrstack's own commands (toolchain check,
            fix-pip-cuda; default: this one), so the target needs none of ocrstack's deps.
            The version assertions run in the target itself (``ocrstack.building.assertions``,
            PyYAML + packaging only).
    """
    py = str(opts.python)
    runner_py = runner_python or sys.executable
    src = str(opts.src)
    tsrc = str(opts.transformers_src)
    tf = versions.pin("transformers")
    commit = str(versions.pin("vllm.fork-commit"))
    ext = str(versions.pin("vllm.extension"))
    steps: list[Step] = list(torch_steps(py))

    steps.append(
        Step(
            "transformers-build-range",
            "transformers in the range vLLM's build needs (guide 3.2); kept if the fork is already there",
            _pip(py, f"transformers{tf['build-range']}"),
            done=DoneCheck((DistCondition("transformers", "spec", tf["build-range"]),)),
        )
    )
    tools = build_tool_specs()
    steps.append(
        Step(
            "build-tools",
            "setuptools-rust, setuptools-scm, setuptools, cmake, ninja, packaging, wheel, jinja2 (guide 3.2)",
            _pip(py, *tools),
            done=DoneCheck(tuple(_requirement_condition(s) for s in tools)),
        )
    )
    if toolchain.kind == "pip":
        wheels = {str(k): str(v) for k, v in versions.pin("pip-cuda-toolchain").items()}
        steps.append(
            Step(
                "pip-cuda-wheels",
                "the pip-wheel CUDA toolchain incl. nvidia-cuda-cccl (guide 3.2: without it, no nv/target)",
                _pip(py, *(f"{k}=={v}" for k, v in wheels.items())),
                done=DoneCheck(tuple(DistCondition(k, "spec", f"=={v}") for k, v in wheels.items())),
            )
        )
        steps.append(
            Step(
                "fix-pip-cuda",
                "guide 3.2 layout fix-up of the pip CUDA wheels (idempotent, no dangling links)",
                (runner_py, "-m", "ocrstack", "toolchain", "fix-pip-cuda", "--python", py),
            )
        )
    check_argv = [
        runner_py,
        "-m",
        "ocrstack",
        "toolchain",
        "check",
        "--python",
        py,
        "--cxx",
        toolchain.cudahostcxx,
    ]
    if toolchain.cuda_home:
        check_argv += ["--cuda-home", toolchain.cuda_home]
    steps.append(
        Step(
            "toolchain-check",
            "nvcc version, nvcc CUDA major == torch's, host gcc accepted, cuda_fp16.h finds nv/target",
            tuple(check_argv),
            env={"CUDA_HOME": toolchain.cuda_home} if toolchain.cuda_home else {},
        )
    )
    steps += patch_steps(patches or [], {"vllm": src, "transformers": tsrc})

    env: dict[str, str] = {}
    if toolchain.cuda_home:
        env["CUDA_HOME"] = toolchain.cuda_home
    env.update(CC=toolchain.cc, CXX=toolchain.cxx, CUDAHOSTCXX=toolchain.cudahostcxx, MAX_JOBS=str(max_jobs))
    if opts.deps is not None:
        env.update(offline.deps_env(opts.deps))
    if ccache and opts.ccache_dir is not None:
        env["CCACHE_DIR"] = str(opts.ccache_dir)
    prepend = [str(Path(py).parent)]
    if toolchain.kind == "pip" and toolchain.cuda_home:
        prepend.append(
            str(Path(toolchain.cuda_home) / "bin")
        )  # guide 3.2: PATH="$VIRTUAL_ENV/bin:$CU/bin:$PATH"
    steps.append(
        Step(
            "compile-vllm",
            f"vLLM editable, --no-build-isolation, MAX_JOBS={max_jobs} (guide 3.2; 96 cores: ~20 min)",
            _pip(py, "-e", src, "--no-build-isolation", "--progress-bar", "off"),
            env=env,
            path_prepend=tuple(prepend),
            cwd=src,
            done=DoneCheck(
                (DistCondition("vllm", "contains", commit[:9]),), files=(str(Path(src) / "vllm" / ext),)
            ),
        )
    )
    steps.append(
        Step(
            "transformers-fork",
            "feat-ocr transformers --no-deps -e, AFTER vLLM (guide 3.2: the order must not be reversed)",
            _pip(py, "--no-deps", "-e", tsrc),
            done=DoneCheck((DistCondition("transformers", "spec", f"=={tf['fork-version']}"),)),
        )
    )
    steps.append(_versions_check(py, "vllm-build", "(guide 3.2, 9)"))
    steps.append(
        Step(
            "import-vllm",
            "`from vllm import LLM` succeeds (guide 3.2)",
            (py, "-c", 'from vllm import LLM; print("vLLM OK")'),
        )
    )
    steps.append(
        Step(
            "extension-file",
            f"the built extension is {ext} (guide 3.2: never judge by `import vllm._C`)",
            (py, "-m", "ocrstack.building.extension", ext),
            env=ocrstack_env(),
        )
    )

    preflight = [
        f"vLLM checkout {src} at pinned commit {commit} (--allow-other-commit to override)",
        f"transformers checkout {tsrc} at pinned commit {tf['fork-commit']}",
        target_line(py, "vllm-build"),
    ]
    if opts.deps is not None:
        preflight.append(f"offline build: every *_SRC_DIR under {opts.deps} exists")
    elif opts.network_check:
        spec = offline.load()
        preflight.append(
            f"{spec.probe_host}:{spec.probe_port} reachable within {opts.network_timeout:g} s, "
            "else stop and list the --deps variables"
        )
    if toolchain.kind == "missing":
        preflight.append(
            "NO CUDA TOOLKIT FOUND: pass --cuda-home, use pixi -e vllm-build, "
            "or install the pip wheels and run `ocrstack toolchain fix-pip-cuda`"
        )
    notes = [f"MAX_JOBS={max_jobs}" + (f": {jobs_reason}" if jobs_reason else "")]
    notes.append(
        f"ccache: {ccache}" + (f", CCACHE_DIR={opts.ccache_dir}" if opts.ccache_dir else "")
        if ccache
        else "ccache not found: install it to avoid full recompiles (guide 8)"
    )
    notes.append(f"toolchain: {toolchain.kind}, CUDA_HOME={toolchain.cuda_home or '-'}")
    notes.append(f"logs: {opts.log_dir}/NN-<step>.log")
    return Plan("build vLLM from source (guide 3.2)", py, tuple(steps), tuple(preflight), tuple(notes))


def prebuilt_plan(opts: PrebuiltOptions) -> Plan:
    """The prebuilt upstream plan: PyPI vLLM, then transformers ``--no-deps``, then assertions. Pure."""
    py = str(opts.python)
    up = versions.pin("upstream")
    steps = (
        Step(
            "vllm-wheel",
            f"vllm=={up['vllm']} from PyPI with its own torch pins",
            _pip(py, f"vllm=={up['vllm']}"),
            done=DoneCheck((DistCondition("vllm", "spec", f"=={up['vllm']}"),)),
        ),
        Step(
            "transformers-override",
            f"transformers{up['transformers']} --no-deps AFTER vLLM "
            f"(vllm pins {up['vllm-transformers-pin']}; "
            "only newer releases know minicpm_ocr)",
            _pip(py, "--no-deps", f"transformers{up['transformers']}"),
            done=DoneCheck((DistCondition("transformers", "spec", up["transformers"]),)),
        ),
        Step(
            "pip-check",
            "pip check: the transformers override must be the only conflict",
            (py, "-m", "ocrstack.building.pipcheck", "--allow", "transformers"),
            env=ocrstack_env(),
        ),
        _versions_check(py, "vllm", "upstream pins"),
        Step(
            "import-vllm",
            "`from vllm import LLM` succeeds",
            (py, "-c", 'from vllm import LLM; print("vLLM OK")'),
        ),
    )
    return Plan(
        "install prebuilt upstream vLLM (PyPI)",
        py,
        steps,
        preflight=(target_line(py, "vllm"),),
        notes=(f"logs: {opts.log_dir}/NN-<step>.log",),
    )


#: checks the tf plan runs by path in the target interpreter (imports nothing from ocrstack)
TFCHECKS = paths.PACKAGE_DIR / "building" / "tfchecks.py"


def tf_plan(opts: TfOptions, patches: list[Patch] | None = None) -> Plan:
    """The transformers-environment plan (guide 3.3; module docstring); pure.

    Steps: ``torch`` (torch, torchvision cu130) -> ``patch-*`` (``patches/transformers`` only) ->
    ``transformers-fork-serving`` (``pip install -e "<TRANSFORMERS_SRC>[serving]"``, with deps;
    done when the fork version is installed and every ``[serving]`` requirement is satisfied)
    -> ``accelerate`` -> ``versions-check`` (``--env tf``) -> ``minicpm-ocr-known``.
    """
    py = str(opts.python)
    tsrc = str(opts.transformers_src)
    tf = versions.pin("transformers")
    extra = "serving"
    steps: list[Step] = list(torch_steps(py, ("torch", "torchvision")))
    steps += patch_steps(patches or [], {"transformers": tsrc})
    steps.append(
        Step(
            "transformers-fork-serving",
            f"feat-ocr transformers -e with its dependencies and the [{extra}] extra "
            "(guide 3.3: `transformers serve` is the OpenAI-compatible server)",
            _pip(py, "-e", f"{tsrc}[{extra}]"),
            done=DoneCheck(
                (DistCondition("transformers", "spec", f"=={tf['fork-version']}"),),
                command=(py, str(TFCHECKS), "extra", extra),
            ),
        )
    )
    steps.append(
        Step(
            "accelerate",
            "accelerate (guide 3.3)",
            _pip(py, "accelerate"),
            done=DoneCheck((DistCondition("accelerate", "spec", ""),)),
        )
    )
    steps.append(_versions_check(py, "tf", "for the tf environment (guide 3.3, 9)"))
    steps.append(
        Step(
            "minicpm-ocr-known",
            "transformers knows the minicpm_ocr architecture (guide 8; on PyPI only "
            f"transformers{versions.pin('upstream.transformers')})",
            (py, str(TFCHECKS), "arch", "minicpm_ocr"),
        )
    )
    preflight = (
        f"transformers checkout {tsrc} at pinned commit {tf['fork-commit']} "
        "(--allow-other-commit to override)",
        target_line(py, "tf"),
    )
    notes = (
        "torch/torchvision/accelerate are skipped when the pixi tf environment already has them",
        f"logs: {opts.log_dir}/NN-<step>.log",
    )
    return Plan(
        "transformers environment with the feat-ocr fork (guide 3.3)", py, tuple(steps), preflight, notes
    )
