"""Serve profiles: data in ``ocrstack/data/serve_profiles.yaml`` turned into argument lists.

A profile names its program, its flags (with ``${var}`` placeholders), the build it
targets and how its environment is prepared. :func:`load` reads and validates the file;
:meth:`Profile.argv` renders the argument list (never a shell string).

The served model name and the port default to ``envs/versions.yaml`` (``serve.served-model-name``,
``serve.port``), the same pins ``ocrstack parse`` uses (guide 4.1: change both together).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from ocrstack import versions
from ocrstack.core import paths
from ocrstack.core.errors import ConfigError, UsageError

_PIN = re.compile(r"\{pin:([A-Za-z0-9_.\-]+)\}")
_FIX_PATH = "pass an existing file with --profiles"


def default_profiles_file() -> Path:
    """``ocrstack/data/serve_profiles.yaml`` inside the package."""
    return paths.data_file("serve_profiles.yaml")


def _pins(text: str) -> str:
    return _PIN.sub(lambda m: str(versions.pin(m.group(1))), text)


@dataclass(frozen=True)
class Build:
    """A server build a profile can target (feat-ocr vLLM, upstream vLLM, transformers, llama.cpp)."""

    id: str
    engine: str
    description: str
    unknown_flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Phase:
    """A long, silent start-up phase: opened by ``start`` and closed by ``end`` (regexes on log lines)."""

    name: str
    start: re.Pattern[str]
    end: re.Pattern[str]


@dataclass(frozen=True)
class RestartPolicy:
    """Guide 4.4: restart once on these doctor rules / phases, then with the enforce-eager flag."""

    doctor_rules: tuple[str, ...]
    phases: tuple[str, ...]
    max_plain_restarts: int = 1


@dataclass(frozen=True)
class Profile:
    """One way to start a server.

    Attributes:
        name: profile id (``dspark``, ``standard``, ``tf``, ``llamacpp``).
        build: id of the :class:`Build` it targets.
        program: argv prefix, e.g. ``("python", "-m", "vllm.entrypoints.openai.api_server")``.
        positional: arguments right after the program (``transformers serve MODEL``).
        args: ``((flag,), (flag, value), ...)`` with ``${var}`` placeholders in values.
        listen: bind flags appended after ``args`` (``--host ${host}``) where the guide's
            command has none (vLLM then binds every interface; this project binds 127.0.0.1).
        vars: placeholder defaults from the file (before versions.yaml and user overrides).
        required_files: vars that must name existing paths before a real launch.
        venv_default: environment directory name from guide 3 (None: use PATH as is).
        cuda_env: set CUDA_HOME/PATH from the venv's ``nvidia/cu13`` (guide 4).
        gpu: set CUDA_VISIBLE_DEVICES.
        enforce_eager_flag: flag appended by the restart policy (guide 4.4), or None.
        served_name: template of the model name clients must send (``transformers serve``
            pins the path it was given; vLLM answers to ``--served-model-name``).
        source: guide section / URL the command comes from.
        checked: ``{flag: how}``: which engine release's own parser accepted the flag
            (issue 14; written from tests/serving/test_profiles_engines.py).
    """

    name: str
    build: str
    program: tuple[str, ...]
    args: tuple[tuple[str, ...], ...]
    positional: tuple[str, ...] = ()
    listen: tuple[str, ...] = ()
    vars: Mapping[str, str] = field(default_factory=dict)
    required_files: tuple[str, ...] = ()
    venv_default: str | None = None
    cuda_env: bool = False
    gpu: bool = False
    enforce_eager_flag: str | None = None
    served_name: str = "${served_model_name}"
    description: str = ""
    source: str = ""
    checked: Mapping[str, str] = field(default_factory=dict)

    @property
    def speculative(self) -> bool:
        """True when the profile starts speculative decoding (its args carry ``--speculative-config``).

        ``serve`` then proves DSpark is active from ``/metrics`` after readiness (guide 6).
        """
        return any(item[0] == "--speculative-config" for item in self.args)

    def variables(self, overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
        """Return the placeholder values: file defaults < versions.yaml pins < ``overrides`` (None ignored).

        ``served_model_name`` and ``port`` come from ``envs/versions.yaml`` (``serve.*``).
        """
        values: dict[str, str] = {
            "served_model_name": str(versions.pin("serve.served-model-name")),
            "port": str(versions.pin("serve.port")),
        }
        values.update({k: str(v) for k, v in self.vars.items()})
        for k, v in (overrides or {}).items():
            if v is not None:
                values[k] = str(v)
        return values

    def served_model(self, overrides: Mapping[str, Any] | None = None) -> str:
        """Return the model name clients must send to this server (guide 4.1 ``--model``)."""
        return Template(self.served_name).safe_substitute(self.variables(overrides))

    def argv(
        self, overrides: Mapping[str, Any] | None = None, extra: tuple[str, ...] = (), listen: bool = True
    ) -> list[str]:
        """Render the full argument list (program first). ``extra`` is appended verbatim.

        ``listen=False`` leaves out the ``listen`` flags: exactly the guide's command.

        Raises:
            UsageError: a placeholder has no value, or a JSON-valued flag is not valid JSON
                after substitution (e.g. a path containing a double quote).
        """
        values = self.variables(overrides)

        def render(text: str) -> str:
            try:
                return Template(text).substitute(values)
            except KeyError as exc:
                raise UsageError(
                    f"serve profile '{self.name}' needs a value for ${{{exc.args[0]}}}",
                    f"pass --set {exc.args[0]}=VALUE",
                ) from exc

        out = list(self.program) + [render(p) for p in self.positional]
        for item in self.args:
            out.append(item[0])
            if len(item) > 1:
                value = render(item[1])
                if value.lstrip().startswith("{"):
                    try:
                        json.loads(value)
                    except json.JSONDecodeError as exc:
                        raise UsageError(
                            f"serve profile '{self.name}': {item[0]} is not valid JSON "
                            f"after substitution: {value}",
                            "avoid double quotes and backslashes in model paths",
                        ) from exc
                out.append(value)
        if listen:
            out.extend(render(x) for x in self.listen)
        out.extend(extra)
        return out


@dataclass(frozen=True)
class ProfileSet:
    """Everything in one profiles file."""

    path: Path
    builds: Mapping[str, Build]
    profiles: Mapping[str, Profile]
    phases: tuple[Phase, ...]
    restart: RestartPolicy

    def get(self, name: str) -> Profile:
        """Return profile ``name``.

        Raises:
            UsageError: unknown name; the message lists the known ones.
        """
        if name not in self.profiles:
            known = ", ".join(self.profiles)
            raise UsageError(f"unknown serve profile '{name}'", f"use --profile with one of: {known}")
        return self.profiles[name]


def _bad(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path}: {what}", "fix the serve profiles file (format in its header comment)")


def _parse(path: Path, data: Any) -> ProfileSet:
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise _bad(path, "expected a mapping with 'schema: 1'")
    builds: dict[str, Build] = {}
    for bid, b in (data.get("builds") or {}).items():
        if not isinstance(b, dict) or "engine" not in b:
            raise _bad(path, f"build '{bid}' needs an 'engine'")
        desc = _pins(str(b.get("description", "")))
        builds[bid] = Build(bid, b["engine"], desc, tuple(b.get("unknown-flags") or ()))
    profiles: dict[str, Profile] = {}
    for name, p in (data.get("profiles") or {}).items():
        if not isinstance(p, dict):
            raise _bad(path, f"profile '{name}' is not a mapping")
        for key in ("build", "program", "args"):
            if key not in p:
                raise _bad(path, f"profile '{name}' has no '{key}'")
        if p["build"] not in builds:
            raise _bad(path, f"profile '{name}' targets unknown build '{p['build']}'")
        args = []
        for item in p["args"]:
            if not isinstance(item, list) or not 1 <= len(item) <= 2 or not str(item[0]).startswith("-"):
                raise _bad(path, f"profile '{name}': each arg must be [flag] or [flag, value], got {item!r}")
            args.append(tuple(str(x) for x in item))
        if "speculative" in p:
            raise _bad(
                path, f"profile '{name}': 'speculative' is implied by a --speculative-config arg; remove it"
            )
        vars_ = {str(k): str(v) for k, v in (p.get("vars") or {}).items()}
        for req in p.get("required-files") or ():
            if req not in vars_:
                raise _bad(path, f"profile '{name}': required file var '{req}' has no default in vars")
        checked = p.get("checked") or {}
        flags = {a[0] for a in args} | {str(x) for x in p.get("listen") or () if str(x).startswith("-")}
        flags |= {str(p["enforce-eager-flag"])} if p.get("enforce-eager-flag") else set()
        if not isinstance(checked, dict) or set(checked) - flags:
            raise _bad(path, f"profile '{name}': 'checked' names flags it does not pass: "
                       f"{sorted(set(checked) - flags) if isinstance(checked, dict) else checked!r}")
        profiles[name] = Profile(
            name=name,
            build=p["build"],
            program=tuple(str(x) for x in p["program"]),
            args=tuple(args),
            positional=tuple(str(x) for x in p.get("positional") or ()),
            listen=tuple(str(x) for x in p.get("listen") or ()),
            vars=vars_,
            required_files=tuple(p.get("required-files") or ()),
            venv_default=p.get("venv-default"),
            cuda_env=bool(p.get("cuda-env", False)),
            gpu=bool(p.get("gpu", False)),
            enforce_eager_flag=p.get("enforce-eager-flag"),
            served_name=str(p.get("served-name", "${served_model_name}")),
            description=_pins(str(p.get("description", ""))),
            source=str(p.get("source", "")),
            checked={str(k): str(v) for k, v in checked.items()},
        )
    if not profiles:
        raise _bad(path, "no profiles")
    phases = []
    for ph in data.get("phases") or ():
        try:
            phases.append(Phase(ph["name"], re.compile(ph["start"]), re.compile(ph["end"])))
        except (KeyError, re.error) as exc:
            raise _bad(path, f"phase {ph!r}: {exc}") from exc
    r = data.get("restart") or {}
    restart = RestartPolicy(
        tuple(r.get("doctor-rules") or ()), tuple(r.get("phases") or ()), int(r.get("max-plain-restarts", 1))
    )
    return ProfileSet(path, builds, profiles, tuple(phases), restart)


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> ProfileSet:
    p = Path(path)
    return _parse(p, paths.read_yaml(p, "serve profiles", _FIX_PATH))


def load(path: Path | None = None) -> ProfileSet:
    """Load and validate a profiles file (default: the packaged ``serve_profiles.yaml``).

    Raises:
        ConfigError: missing file, invalid YAML, or a structural error (message names the profile).
    """
    p = Path(path) if path else default_profiles_file()
    try:
        mtime = p.stat().st_mtime
    except OSError as exc:
        raise ConfigError(f"{p}: serve profiles file not found", _FIX_PATH) from exc
    return _load(str(p), mtime)
