"""Build plan data model and the step builders every plan shares; pure (no side effects).

:class:`Step` (argv, environment, done-check), :class:`Plan` (ordered steps plus preflight and
notes), :class:`Toolchain` (resolved CUDA_HOME and host compilers), and the steps the vLLM and
transformers plans have in common (``torch``, ``patch-*``, ``versions-check``). The plans
themselves are in :mod:`ocrstack.building.plan`. Every version comes from envs/versions.yaml via
:func:`ocrstack.versions.pin`.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import asdict, dataclass, field

from ocrstack import versions
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


def pip_install(python: str, *args: str) -> tuple[str, ...]:
    return (python, "-m", "pip", "install", *args)


def ocrstack_env() -> dict[str, str]:
    """``PYTHONPATH`` that makes this ocrstack importable by the target interpreter (``-m ocrstack``)."""
    return {"PYTHONPATH": str(paths.PACKAGE_DIR.parent)}


def versions_check_step(py: str, env: str, why: str) -> Step:
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
            pip_install(python, *(f"{n}=={t[n]}" for n in names), "--index-url", t["index"]),
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


def requirement_condition(spec: str) -> DistCondition:
    from packaging.requirements import Requirement

    req = Requirement(spec)
    return DistCondition(req.name, "spec", str(req.specifier))
