"""Serve profiles: data in ``ocrstack/data/serve_profiles.yaml`` turned into argument lists.

A profile names its program, its flags (with ``${var}`` placeholders), the build it
targets (whose ``engine`` is a registered back-end) and how its environment is prepared.
:func:`load` reads the file once (cached per path and mtime), validates it against
:mod:`ocrstack.backends.schema` and returns typed objects; :meth:`Profile.argv` renders the
argument list (never a shell string). ``serve``, ``preflight``, ``deploy`` and the DSpark
proof all read the file through :func:`load`.

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
from ocrstack.backends import registry
from ocrstack.backends.base import Backend
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
class DsparkCheck:
    """``dspark-check``: counter base names (without ``_total``) and the accepted length range (guide 6)."""

    accepted: str
    drafts: str
    draft_tokens: str
    per_position: str
    low: float
    high: float
    source: str


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
    dspark_check: DsparkCheck | None = None

    def backend(self, profile: Profile) -> Backend:
        """The serving back-end of ``profile``'s build (its ``engine``, looked up in the registry)."""
        return registry.get(self.builds[profile.build].engine)

    def get(self, name: str) -> Profile:
        """Return profile ``name``.

        Raises:
            UsageError: unknown name; the message lists the known ones.
        """
        if name not in self.profiles:
            known = ", ".join(self.profiles)
            raise UsageError(f"unknown serve profile '{name}'", f"use --profile with one of: {known}")
        return self.profiles[name]


def _parse(path: Path, data: Any) -> ProfileSet:
    from ocrstack.backends import schema  # pydantic: only when a profiles file is read

    doc = schema.validate(path, data)
    builds = {
        bid: Build(bid, b.engine, _pins(b.description), tuple(b.unknown_flags))
        for bid, b in doc.builds.items()
    }
    profiles = {
        name: Profile(
            name=name,
            build=p.build,
            program=tuple(p.program),
            args=tuple(tuple(item) for item in p.args),
            positional=tuple(p.positional),
            listen=tuple(p.listen),
            vars=dict(p.vars),
            required_files=tuple(p.required_files),
            venv_default=p.venv_default,
            cuda_env=p.cuda_env,
            gpu=p.gpu,
            enforce_eager_flag=p.enforce_eager_flag,
            served_name=p.served_name,
            description=_pins(p.description),
            source=p.source,
            checked=dict(p.checked),
        )
        for name, p in doc.profiles.items()
    }
    phases = tuple(Phase(ph.name, ph.start, ph.end) for ph in doc.phases)
    r = doc.restart
    restart = RestartPolicy(tuple(r.doctor_rules), tuple(r.phases), r.max_plain_restarts)
    d = doc.dspark_check
    dspark = (
        DsparkCheck(
            d.counters.accepted,
            d.counters.drafts,
            d.counters.draft_tokens,
            d.counters.per_position,
            *d.acceptance_length,
            d.source,
        )
        if d is not None
        else None
    )
    return ProfileSet(path, builds, profiles, phases, restart, dspark)


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> ProfileSet:
    p = Path(path)
    return _parse(p, paths.read_yaml(p, "serve profiles", _FIX_PATH))


def load(path: Path | None = None) -> ProfileSet:
    """Load and validate a profiles file (default: the packaged ``serve_profiles.yaml``).

    Raises:
        ConfigError: missing file, invalid YAML, or a schema error (``FILE: KEY: problem``).
    """
    p = Path(path) if path else default_profiles_file()
    try:
        mtime = p.stat().st_mtime
    except OSError as exc:
        raise ConfigError(f"{p}: serve profiles file not found", _FIX_PATH) from exc
    return _load(str(p), mtime)
