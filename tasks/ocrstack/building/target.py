"""The interpreter a build installs into: the right Python, and not the SDK environment.

``ocrstack build vllm`` / ``vllm-prebuilt`` / ``tf`` pip-install torch (and vLLM) into
``--python``, which defaults to the interpreter running ocrstack. Run from the wrong
environment that would, for example, put torch 2.14.0+cu130 and vLLM into a Python 3.11
SDK venv. Before any step (and during ``--dry-run``) the target is probed once, read-only,
and refused with :class:`~ocrstack.core.errors.ConfigError` (exit 9) when:

- its Python version does not satisfy the environment's pin, ``python.<env>`` in
  envs/versions.yaml (``vllm-build``: 3.13, guide 3.2/9; guide 2: the vLLM env needs >= 3.11,
  the transformers env >= 3.10). A bare ``X.Y`` pin means ``==X.Y.*``, as in ``ocrstack versions check``;
- it holds packages that only the SDK environment has (guide 1: ``sdk-env`` must not share an
  environment with torch / vLLM -- numpy and opencv conflicts). Those are the ``sdk`` pins of
  envs/versions.yaml (minicpmvocr, paddlepaddle(-gpu), paddlex) and ocrstack's own ``sdk`` extra
  (rapidocr, rapid-layout, onnxruntime), minus ocrstack's core dependencies (pypdfium2 is
  needed everywhere).

``--allow-other-python`` turns both refusals into warnings.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ocrstack import versions
from ocrstack.core import proc
from ocrstack.core.errors import ConfigError
from ocrstack.core.results import Check, Report, Status

_PROBE = (
    "import importlib.metadata as m, json, sys\n"
    "out = {'python': '%d.%d.%d' % sys.version_info[:3], 'executable': sys.executable, 'dists': {}}\n"
    "for d in json.loads(sys.argv[1]):\n"
    "    try:\n"
    "        out['dists'][d] = m.version(d)\n"
    "    except m.PackageNotFoundError:\n"
    "        out['dists'][d] = None\n"
    "print(json.dumps(out))\n"
)


@dataclass(frozen=True)
class TargetFacts:
    """What the target interpreter reported: ``python`` (``X.Y.Z``), its ``executable``, and
    ``dists`` (distribution name -> installed version, None when absent)."""

    python: str
    executable: str
    dists: dict[str, str | None]


def sdk_packages() -> tuple[str, ...]:
    """Distributions that mark an SDK environment (module docstring), normalised names, sorted."""
    names = {
        canonicalize_name(k) for k in versions.pin("sdk") if not str(k).endswith("-index")
    }  # e.g. paddlepaddle-gpu-index is a URL, not a package
    core: set[str] = set()
    try:
        for spec in importlib.metadata.requires("ocrstack") or []:
            try:
                req = Requirement(spec)
            except InvalidRequirement:
                continue
            marker = str(req.marker or "")
            if not marker:
                core.add(canonicalize_name(req.name))
            elif "extra" in marker and req.marker.evaluate({"extra": "sdk"}):
                names.add(canonicalize_name(req.name))
    except importlib.metadata.PackageNotFoundError:  # running from a bare source tree
        pass
    return tuple(sorted(names - core))


def probe(python: str | Path, dists: tuple[str, ...]) -> TargetFacts:
    """Run ``python`` once (read-only) and return its version and the versions of ``dists``.

    Raises:
        ConfigError: the interpreter does not exist or does not answer.
    """
    remedy = "pass the interpreter of the target environment, e.g. `pixi run -e vllm-build which python`"
    argv = [str(python), "-c", _PROBE, json.dumps(list(dists))]
    try:
        done = proc.run(argv, capture=True, check=False, echo=False)
    except ConfigError as exc:  # the interpreter does not exist
        raise ConfigError(f"--python {python}: cannot run it ({exc.message})", remedy) from exc
    try:
        data = json.loads(done.stdout) if done.returncode == 0 else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise ConfigError(
            f"--python {python}: cannot run it (exit {done.returncode}: {done.stderr.strip()[-200:]})", remedy
        )
    return TargetFacts(str(data["python"]), str(data["executable"]), dict(data["dists"]))


def python_spec(want: str) -> SpecifierSet:
    """``"3.13"`` -> ``==3.13.*``; a specifier such as ``">=3.10"`` is taken as is (as ``versions check``)."""
    return SpecifierSet(want if want[:1] in "<>=!~" else f"=={want}.*")


def check_target(env: str, facts: TargetFacts, allow_other_python: bool = False) -> Report:
    """Judge ``facts`` for environment ``env`` (a ``python.<env>`` key of envs/versions.yaml).

    Returns a report with checks ``target-python`` and ``target-not-sdk``; failures become
    warnings with ``allow_other_python``.
    """
    want = str(versions.pin(f"python.{env}"))
    bad = Status.WARN if allow_other_python else Status.FAIL
    override = " (or --allow-other-python to install into it anyway)"
    report = Report(f"target interpreter {facts.executable} (environment {env})")
    try:
        ok = Version(facts.python) in python_spec(want)
    except InvalidVersion:
        ok = False
    report.add(
        Check(
            "target-python",
            Status.PASS if ok else bad,
            f"Python {facts.python} (pin python.{env}: {want}; guide 2)",
            ""
            if ok
            else f"run it in `pixi run -e {env} ...` or pass --python of a Python {want} env" + override,
            want,
            facts.python,
        )
    )
    found = {d: v for d, v in facts.dists.items() if v is not None}
    listed = ", ".join(f"{d} {v}" for d, v in sorted(found.items()))
    report.add(
        Check(
            "target-not-sdk",
            bad if found else Status.PASS,
            f"SDK packages installed: {listed} (guide 1: the SDK env must not hold torch/vLLM)"
            if found
            else "no SDK packages installed",
            f"pass --python of the {env} environment, not the SDK one" + override if found else "",
        )
    )
    return report


def require_target(
    python: str | Path,
    env: str,
    allow_other_python: bool = False,
    *,
    probe_fn: Callable[[str | Path, tuple[str, ...]], TargetFacts] | None = None,
    out=None,
) -> Report:
    """Probe ``python``, print the report to ``out`` (stderr) and refuse a wrong target.

    Raises:
        ConfigError: a check failed (see the module docstring), or the interpreter cannot run.
    """
    facts = (probe_fn or probe)(python, sdk_packages())
    report = check_target(env, facts, allow_other_python)
    print(report.to_text(), file=out or sys.stderr)
    report.raise_if_failed(f"target interpreter {python}", ConfigError)
    return report
