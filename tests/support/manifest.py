"""Checks on ``pixi.toml`` that stand in for a pixi binary (none can be installed here).

- :func:`schema_errors`: validation against pixi's official JSON schema (draft-07,
  ``shared/pixi-schema/schema.json``, pixi v0.77).
- :func:`task_verbs`: the ``ocrstack`` subcommand each task calls (tasks are thin wiring).
- :func:`reference_errors`: every ``depends-on``/``default-environment``/environment
  feature names something that exists.
- :func:`pin_mismatches`: every pinned dependency equals ``envs/versions.yaml``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tomllib
from packaging.requirements import Requirement

from ocrstack import versions
from ocrstack.core.errors import ConfigError

#: conda dependency name -> versions.yaml key (shared/docs/PIXI-NOTES.md explains each).
CONDA_PINS: dict[str, str] = {
    "python": "conda-toolchain.python",
    "cuda-version": "conda-toolchain.cuda-version",
    "gcc_linux-64": "conda-toolchain.gcc",
    "gxx_linux-64": "conda-toolchain.gcc",
    "cmake": "conda-toolchain.cmake",
}

#: Per-feature exceptions to CONDA_PINS: feature -> {conda name -> versions.yaml key} (issue 14:
#: the MinerU-Diffusion SGLang fork runs on the repository's Python 3.12, not the toolchain's 3.13).
FEATURE_CONDA_PINS: dict[str, dict[str, str]] = {
    "mineru-diffusion": {"python": "mineru-diffusion.python-conda"},
}

#: PyPI dependency name -> versions.yaml key holding the bare version (pixi adds "==").
PYPI_EXACT: dict[str, str] = {
    "torch": "torch.torch",
    "torchaudio": "torch.torchaudio",
    "torchvision": "torch.torchvision",
    "paddlepaddle-gpu": "sdk.paddlepaddle-gpu",
    "paddlex": "sdk.paddlex",
}

#: PyPI dependency name -> versions.yaml key of the index it must come from.
PYPI_INDEX: dict[str, str] = {
    "torch": "torch.index",
    "torchaudio": "torch.index",
    "torchvision": "torch.index",
    "paddlepaddle-gpu": "sdk.paddlepaddle-gpu-index",
}


def load(path: Path) -> dict[str, Any]:
    """Parse a pixi manifest with :mod:`tomllib` (TOML 1.0).

    Raises:
        ConfigError: file missing or not valid TOML.
    """
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: not found", "run from the repository root") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc})", "fix the syntax at the position shown") from exc


def schema_errors(manifest: dict[str, Any], schema_path: Path) -> list[str]:
    """Return ``"path: message"`` for every violation of pixi's JSON schema (empty = valid)."""
    import jsonschema  # test/dev dependency only

    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'/'.join(str(p) for p in err.absolute_path) or '<root>'}: {err.message}"
        for err in sorted(validator.iter_errors(manifest), key=lambda e: list(map(str, e.absolute_path)))
    ]


def features(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return ``{feature name: table}``; the root tables form the feature ``default``."""
    out = {
        "default": {k: manifest[k] for k in ("dependencies", "pypi-dependencies", "tasks") if k in manifest}
    }
    out.update(manifest.get("feature", {}))
    return out


def environments(manifest: dict[str, Any]) -> dict[str, list[str]]:
    """Return ``{environment: [feature, ...]}`` including the implicit default feature."""
    out: dict[str, list[str]] = {"default": ["default"]}
    for name, spec in manifest.get("environments", {}).items():
        feats = spec if isinstance(spec, list) else list(spec.get("features", []))
        if not (isinstance(spec, dict) and spec.get("no-default-feature")):
            feats = [*feats, "default"]
        out[name] = feats
    return out


def tasks(manifest: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Yield ``(feature, task name, task table)`` for every task (string tasks become ``{"cmd": ...}``)."""
    for feat, table in features(manifest).items():
        for name, task in table.get("tasks", {}).items():
            yield feat, name, (task if isinstance(task, dict) else {"cmd": task})


_PREFIX = re.compile(r"^\s*cd\s+\S+\s*&&\s*")


def task_verbs(cmd: str | list[str]) -> list[str]:
    """Return the ``ocrstack`` words of a task command, e.g. ``["versions", "check"]``.

    A leading ``cd "$INIT_CWD" &&`` (run where the user invoked pixi) is allowed;
    anything else before ``ocrstack`` is rejected by returning ``[]``.
    """
    text = cmd if isinstance(cmd, str) else shlex.join(cmd)
    text = _PREFIX.sub("", text)
    words = shlex.split(re.sub(r"\{\{.*?\}\}", "ARG", text))
    if not words or words[0] != "ocrstack":
        return []
    verbs = []
    for word in words[1:]:
        if word.startswith("-") or word == "ARG" or not re.fullmatch(r"[a-z][a-z0-9-]*", word):
            break
        verbs.append(word)
    return verbs


def reference_errors(manifest: dict[str, Any]) -> list[str]:
    """Return dangling references: unknown features in environments, unknown tasks in
    ``depends-on``, unknown environments in ``default-environment``/``depends-on``."""
    errs: list[str] = []
    feats = features(manifest)
    envs = environments(manifest)
    for env, names in envs.items():
        errs += [f"environment {env}: unknown feature {f}" for f in names if f not in feats]
    all_tasks = {name for _, name, _ in tasks(manifest)}
    for feat, name, task in tasks(manifest):
        de = task.get("default-environment")
        if de and de not in envs:
            errs.append(f"task {name}: default-environment {de} does not exist")
        if de and de in envs and feat not in envs[de]:
            errs.append(
                f"task {name} (feature {feat}): default-environment {de} does not include that feature"
            )
        deps = task.get("depends-on", [])
        for dep in deps if isinstance(deps, list) else [deps]:
            target = dep if isinstance(dep, str) else dep.get("task")
            if target not in all_tasks:
                errs.append(f"task {name}: depends-on unknown task {target}")
            if isinstance(dep, dict) and dep.get("environment") and dep["environment"] not in envs:
                errs.append(f"task {name}: depends-on environment {dep['environment']} does not exist")
    return errs


def _pypi_spec(value: Any) -> tuple[str | None, str | None]:
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and "version" in value:
        return value["version"], value.get("index")
    return None, None  # path/git requirements carry no version


def pin_mismatches(manifest: dict[str, Any], pins_path: Path | None = None) -> list[str]:
    """Return every pinned dependency in the manifest that differs from envs/versions.yaml.

    Unpinned specs (``"*"``) are allowed; any other spec must be traceable to a pin.
    """
    errs: list[str] = []
    build_tools = {
        Requirement(r).name: str(Requirement(r).specifier) for r in versions.pin("build-tools", pins_path)
    }
    cuda = str(versions.pin("conda-toolchain.cuda", pins_path))
    for entry in manifest.get("workspace", {}).get("platforms", []):
        if isinstance(entry, dict) and "cuda" in entry and entry["cuda"] != cuda:
            errs.append(f"platform {entry.get('name')}: cuda {entry['cuda']} != versions.yaml {cuda}")
    for feat, table in features(manifest).items():
        for name, spec in table.get("dependencies", {}).items():
            spec = spec if isinstance(spec, str) else spec.get("version", "*")
            if spec == "*":
                continue
            pins = {**CONDA_PINS, **FEATURE_CONDA_PINS.get(feat, {})}
            if name not in pins:
                errs.append(f"feature {feat}: conda {name} = {spec!r} has no pin in envs/versions.yaml")
            elif spec != (want := str(versions.pin(pins[name], pins_path))):
                errs.append(f"feature {feat}: conda {name} = {spec!r} != versions.yaml {want!r}")
        for name, value in table.get("pypi-dependencies", {}).items():
            spec, index = _pypi_spec(value)
            if spec in (None, "*"):
                continue
            if name in PYPI_EXACT:
                want = "==" + str(versions.pin(PYPI_EXACT[name], pins_path))
            elif name in build_tools:
                want = build_tools[name]
            else:
                errs.append(f"feature {feat}: pypi {name} = {spec!r} has no pin in envs/versions.yaml")
                continue
            if str(Requirement(f"x{spec}").specifier) != str(Requirement(f"x{want}").specifier):
                errs.append(f"feature {feat}: pypi {name} = {spec!r} != versions.yaml {want!r}")
            if name in PYPI_INDEX and index != (url := versions.pin(PYPI_INDEX[name], pins_path)):
                errs.append(f"feature {feat}: pypi {name} index {index!r} != versions.yaml {url!r}")
    return errs
