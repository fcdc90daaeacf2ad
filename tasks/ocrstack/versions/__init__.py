"""Pins from ``envs/versions.yaml`` and the installed-version assertions.

``ocrstack versions show`` prints the resolved pins; ``ocrstack versions check
--env NAME`` compares what is installed in the running interpreter with the
expectations for environment NAME and fails with the fix (guide 3.2, 8, 9).
Installed versions are read with :mod:`importlib.metadata`; it, ``packaging`` and ``yaml`` are
imported by the functions that use them, so building the CLI parser imports none of them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ocrstack.core import paths
from ocrstack.core.errors import ConfigError
from ocrstack.core.results import Check, Report, Status


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Any]:
    data = paths.read_yaml(path, "the version pins", "run from an ocrstack checkout or set OCRSTACK_VERSIONS")
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise ConfigError(
            f"{path}: expected a mapping with 'schema: 1'", "restore envs/versions.yaml from git"
        )
    return data


def pins(path: Path | None = None) -> dict[str, Any]:
    """Return the parsed ``envs/versions.yaml`` as a nested dict (cached per path).

    Raises:
        ConfigError: the file is missing, not YAML, or not schema 1.
    """
    return _load(str(path or paths.versions_file()))


def pin(dotted: str, path: Path | None = None) -> Any:
    """Return one pin by dotted path, e.g. ``pin("serve.port") -> 18499``.

    Raises:
        ConfigError: no such key in versions.yaml.
    """
    node: Any = pins(path)
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(f"versions.yaml has no pin '{dotted}'", "add it to envs/versions.yaml")
        node = node[part]
    return node


def installed(dist: str) -> str | None:
    """Return the installed version string of distribution ``dist`` or None."""
    import importlib.metadata as md  # not at start-up: ``ocrstack --help`` reads no metadata

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


# --------------------------------------------------------------------------- expectations


@dataclass(frozen=True)
class Expectation:
    """One assertion: distribution ``dist`` must satisfy ``test(version)``.

    ``want`` is the human-readable expectation, ``fix`` the remedy when it fails,
    ``absent_ok`` whether a missing package is only a warning.
    """

    dist: str
    want: str
    test: Callable[[str], bool]
    fix: str
    absent_ok: bool = False


def _exact(expected: str) -> Callable[[str], bool]:
    return lambda found: found == expected


def _spec(spec: str) -> Callable[[str], bool]:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    specifier = SpecifierSet(spec, prereleases=True)

    def test(found: str) -> bool:
        try:
            return Version(found) in specifier
        except InvalidVersion:
            return False

    return test


def _public(expected: str, local: str = "") -> Callable[[str], bool]:
    """Match ``expected`` exactly, allowing/demanding a ``+local`` suffix."""
    return lambda found: found == expected + local


def _fork_transformers(v: dict[str, Any]) -> Expectation:
    want = v["transformers"]["fork-version"]
    return Expectation(
        "transformers",
        want,
        _exact(want),
        # guide 8: 5.19.0 instead of 5.19.0.dev0 means vLLM's deps overwrote the editable fork
        f"reinstall the feat-ocr fork after vLLM: pip install --no-deps -e <TRANSFORMERS_SRC> "
        f"(commit {v['transformers']['fork-commit']}; guide 3.2/8)",
    )


def _torch_cu130(v: dict[str, Any]) -> list[Expectation]:
    t = v["torch"]
    fix = (
        f"pip install torch=={t['torch']} torchaudio=={t['torchaudio']} "
        f"torchvision=={t['torchvision']} --index-url {t['index']}"
    )
    return [
        Expectation("torch", t["torch"] + t["local"], _public(t["torch"], t["local"]), fix),
        Expectation("torchvision", t["torchvision"] + t["local"], _public(t["torchvision"], t["local"]), fix),
        Expectation(
            "torchaudio",
            t["torchaudio"] + t["local"],
            _public(t["torchaudio"], t["local"]),
            fix,
            absent_ok=True,
        ),
    ]


def _vllm_fork(v: dict[str, Any]) -> Expectation:
    commit = v["vllm"]["fork-commit"]
    return Expectation(
        "vllm",
        f"built from commit {commit}",
        # source builds carry the commit in the local version: 0.x.y.devN+g<sha>...
        lambda found: f"g{commit[:9]}" in found or commit[:9] in found,
        f"build vLLM from the feat-ocr checkout at {commit}: pixi run build-vllm (guide 3.2)",
    )


def _mineru_diffusion(v: dict[str, Any]) -> list[Expectation]:
    """Issue 14: the SGLang fork's own torch/transformers pins and the fork commit in sglang's version."""
    m = v["mineru-diffusion"]
    commit = str(m["sglang-fork-commit"])
    build = f"ocrstack build mineru-diffusion --sglang-src <checkout of {m['sglang-fork']} at {commit[:9]}>"
    return [
        Expectation("torch", m["torch"], lambda f: f.split("+")[0] == m["torch"], build),
        Expectation("transformers", m["transformers"], _exact(m["transformers"]), build),
        Expectation(
            "sglang",
            f"the fork built from commit {commit[:9]}",
            # setuptools-scm local version of an editable install: 0.5.x.devN+g<sha>
            lambda found: commit[:7] in found,
            f"{build}; a checkout without tags reports 0.0.0.dev0: git fetch --tags first "
            "(upstream SGLang cannot serve MinerU-Diffusion: MinerU-Diffusion issues 8 and 10)",
        ),
    ]


def expectations(env: str, path: Path | None = None) -> list[Expectation]:
    """Return the version assertions for environment ``env``.

    Environments (pixi.toml / README): ``vllm-build`` and ``merged`` (guide 3.2, 7, 9),
    ``vllm`` (upstream prebuilt), ``tf`` (guide 3.3), ``sdk`` (guide 3.1),
    ``mineru-diffusion`` (SGLang fork, issue 14),
    ``cpu-test`` (this project's test environment), ``default``/``dev`` (pixi tooling env:
    only the interpreter is pinned).

    Raises:
        ConfigError: unknown environment name (the message lists the valid ones).
    """
    v = pins(path)
    up = v["upstream"]
    cpu = v["cpu-test"]
    table: dict[str, list[Expectation]] = {
        "vllm-build": [*_torch_cu130(v), _fork_transformers(v), _vllm_fork(v)],
        "merged": [*_torch_cu130(v), _fork_transformers(v), _vllm_fork(v)],
        "vllm": [
            Expectation("vllm", up["vllm"], _exact(up["vllm"]), f"pip install vllm=={up['vllm']}"),
            Expectation(
                "transformers",
                up["transformers"],
                _spec(up["transformers"]),
                f"pip install --no-deps 'transformers{up['transformers']}' "
                f"(after vLLM; vllm pins {up['vllm-transformers-pin']})",
            ),
        ],
        "tf": [*_torch_cu130(v)[:2], _fork_transformers(v)],
        "sdk": [
            Expectation(
                "paddlex",
                v["sdk"]["paddlex"],
                _exact(v["sdk"]["paddlex"]),
                f"pip install paddlex=={v['sdk']['paddlex']}",
                absent_ok=True,
            ),
            Expectation(
                "pypdfium2",
                v["sdk"]["pypdfium2"],
                _spec(v["sdk"]["pypdfium2"]),
                "pip install 'pypdfium2>=4' (guide 8)",
            ),
        ],
        "mineru-diffusion": _mineru_diffusion(v),
        # tooling environments: only the interpreter is pinned
        "default": [],
        "dev": [],
        "cpu-test": [
            Expectation(
                "torch",
                cpu["torch"],
                lambda f: f.split("+")[0] == cpu["torch"],
                f"pip install torch=={cpu['torch']} torchvision=={cpu['torchvision']}",
            ),
            Expectation(
                "torchvision",
                cpu["torchvision"],
                lambda f: f.split("+")[0] == cpu["torchvision"],
                f"pip install torch=={cpu['torch']} torchvision=={cpu['torchvision']}",
            ),
            Expectation(
                "transformers",
                cpu["transformers"],
                _exact(cpu["transformers"]),
                f"pip install transformers=={cpu['transformers']}",
            ),
        ],
    }
    if env not in table:
        raise ConfigError(f"unknown environment '{env}'", f"use one of: {', '.join(sorted(table))}")
    return table[env]


def _python_check(env: str, v: dict[str, Any]) -> Check:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    want = str(v["python"].get(env, v["python"]["sdk"]) if env != "cpu-test" else ">=3.10")
    found = ".".join(str(n) for n in sys.version_info[:3])
    spec = want if want[0] in "<>=!~" else f"=={want}.*"
    ok = Version(found) in SpecifierSet(spec)
    return Check(
        "python",
        Status.PASS if ok else Status.FAIL,
        f"{found} (want {want})",
        fix=""
        if ok
        else f"create the environment with Python {want} (pixi does this: pixi install -e {env})",
        expected=want,
        found=found,
    )


def check(env: str, path: Path | None = None, lookup: Callable[[str], str | None] = installed) -> Report:
    """Compare installed versions with the expectations for ``env``.

    ``lookup`` maps a distribution name to its installed version (tests inject fakes).
    Returns a :class:`Report`; the caller decides the exit code from ``report.ok``.
    """
    v = pins(path)
    report = Report(f"versions check --env {env} (pins: {path or paths.versions_file()})")
    report.add(_python_check(env, v))
    for exp in expectations(env, path):
        found = lookup(exp.dist)
        if found is None:
            status = Status.WARN if exp.absent_ok else Status.FAIL
            report.add(Check(exp.dist, status, f"not installed (want {exp.want})", exp.fix, exp.want, None))
            continue
        ok = exp.test(found)
        detail = f"{found} (want {exp.want})"
        if (
            not ok
            and exp.dist == "transformers"
            and exp.want.endswith(".dev0")
            and found == exp.want[: -len(".dev0")]
        ):
            detail += " -- the editable feat-ocr install was overwritten by vLLM's dependencies (guide 8)"
        report.add(
            Check(
                exp.dist, Status.PASS if ok else Status.FAIL, detail, "" if ok else exp.fix, exp.want, found
            )
        )
    if env == "sdk":
        # guide 1: sdk-env must not share an environment with torch / vLLM (numpy, opencv conflicts)
        for heavy in ("torch", "vllm"):
            found = lookup(heavy)
            report.add(
                Check(
                    f"no-{heavy}",
                    Status.FAIL if found else Status.PASS,
                    f"{heavy} {found} is installed" if found else f"{heavy} not installed",
                    f"use a separate environment for {heavy} (guide 1)" if found else "",
                )
            )
    return report


def show(path: Path | None = None) -> str:
    """Return the resolved pins as YAML text, headed by the file they came from."""
    p = path or paths.versions_file()
    import yaml

    return f"# {p}\n" + yaml.safe_dump(pins(p), sort_keys=False, allow_unicode=True)
