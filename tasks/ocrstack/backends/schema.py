"""The schema of ``serve_profiles.yaml`` (pydantic v2 models of the file's shape).

Imported only by :func:`ocrstack.backends.profiles.load` (pydantic stays out of
``ocrstack --help``). Keys are the file's own (dashes); the cross-key rules (a profile's
build exists, its required files have defaults, ``checked`` names flags it passes) are
validators here, so every problem is reported as ``FILE: KEY: what is wrong`` with one fix.
The format is described in the file's header comment.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ocrstack.backends import registry
from ocrstack.core.errors import ConfigError

FIX = "fix the serve profiles file (format in its header comment)"


class _Model(BaseModel):
    # unknown keys are refused (a typo must not be ignored); YAML numbers are taken as text
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)


class BuildModel(_Model):
    """``builds.<id>``: a server build; ``engine`` is a registered back-end."""

    engine: str
    description: str = ""
    unknown_flags: list[str] = Field(default_factory=list, alias="unknown-flags")

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: str) -> str:
        if value not in registry.names():
            raise ValueError(
                f"unknown engine '{value}' (registered back-ends: {', '.join(registry.names())})"
            )
        return value


class ProfileModel(_Model):
    """``profiles.<name>``: one way to start a server (fields: the file's header comment)."""

    build: str
    program: list[str] = Field(min_length=1)
    args: list[list[str]]
    description: str = ""
    source: str = ""
    positional: list[str] = Field(default_factory=list)
    listen: list[str] = Field(default_factory=list)
    vars: dict[str, str] = Field(default_factory=dict)
    required_files: list[str] = Field(default_factory=list, alias="required-files")
    venv_default: str | None = Field(default=None, alias="venv-default")
    cuda_env: bool = Field(default=False, alias="cuda-env")
    gpu: bool = False
    enforce_eager_flag: str | None = Field(default=None, alias="enforce-eager-flag")
    served_name: str = Field(default="${served_model_name}", alias="served-name")
    checked: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _no_speculative_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and "speculative" in data:
            raise ValueError("'speculative' is implied by a --speculative-config arg; remove it")
        return data

    @field_validator("args")
    @classmethod
    def _flag_items(cls, value: list[list[str]]) -> list[list[str]]:
        for item in value:
            if not 1 <= len(item) <= 2 or not item[0].startswith("-"):
                raise ValueError(f"each arg must be [flag] or [flag, value], got {item!r}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ProfileModel:
        missing = [r for r in self.required_files if r not in self.vars]
        if missing:
            raise ValueError(f"required file var '{missing[0]}' has no default in vars")
        flags = {a[0] for a in self.args} | {x for x in self.listen if x.startswith("-")}
        flags |= {self.enforce_eager_flag} if self.enforce_eager_flag else set()
        if set(self.checked) - flags:
            raise ValueError(f"'checked' names flags it does not pass: {sorted(set(self.checked) - flags)}")
        return self


class PhaseModel(_Model):
    """``phases[]``: a long, silent start-up phase between two log regexes."""

    name: str
    start: re.Pattern[str]
    end: re.Pattern[str]


class RestartModel(_Model):
    """``restart``: the guide 4.4 restart policy."""

    doctor_rules: list[str] = Field(default_factory=list, alias="doctor-rules")
    phases: list[str] = Field(default_factory=list)
    max_plain_restarts: int = Field(default=1, alias="max-plain-restarts")


class CountersModel(_Model):
    """``dspark-check.counters``: vLLM spec-decode counter names (without ``_total``)."""

    accepted: str
    drafts: str
    draft_tokens: str = Field(alias="draft-tokens")
    per_position: str = Field(alias="per-position")


class DsparkCheckModel(_Model):
    """``dspark-check``: the guide 6 proof's counters and accepted mean acceptance length."""

    source: str = "guide 6"
    acceptance_length: tuple[float, float] = Field(alias="acceptance-length")
    counters: CountersModel


class ProfilesFile(_Model):
    """The whole file (``schema: 1``)."""

    schema_: Literal[1] = Field(alias="schema")
    builds: dict[str, BuildModel] = Field(default_factory=dict)
    profiles: dict[str, ProfileModel] = Field(min_length=1)
    phases: list[PhaseModel] = Field(default_factory=list)
    restart: RestartModel = Field(default_factory=RestartModel)
    dspark_check: DsparkCheckModel | None = Field(default=None, alias="dspark-check")

    @model_validator(mode="after")
    def _known_builds(self) -> ProfilesFile:
        for name, p in self.profiles.items():
            if p.build not in self.builds:
                raise ValueError(f"profile '{name}' targets unknown build '{p.build}'")
        return self


def validate(path: Path, data: Any) -> ProfilesFile:
    """Validate parsed YAML ``data`` read from ``path``.

    Raises:
        ConfigError: ``FILE: KEY: problem`` for the first problem (all of them when several),
            with the fix; e.g. ``p.yaml: profiles.x.args: each arg must be [flag] or [flag, value]``.
    """
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise ConfigError(f"{path}: expected a mapping with 'schema: 1'", FIX)
    try:
        return ProfilesFile.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(x) for x in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            problems.append(f"{where}: {msg}" if where else msg)
        raise ConfigError(f"{path}: " + "; ".join(problems), FIX) from exc
