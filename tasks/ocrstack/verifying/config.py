"""``ocrstack/data/verify.yaml``: output heuristics (guide 6) and the guide 7 reference values."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ocrstack.core import paths
from ocrstack.core.errors import ConfigError


@dataclass(frozen=True)
class Reference:
    """Guide 7 reference values for the real model on the 1080x1080 table image."""

    model: str
    image_size: tuple[int, int]
    prompt: str
    prompt_tokens: int
    vision_tokens: int
    generated_tokens: int
    output_chars: int
    params_billion: float
    source: str


@dataclass(frozen=True)
class VerifyConfig:
    """Loaded verify.yaml."""

    latex: re.Pattern[str]
    readable_min_share: float
    replacement_max_share: float
    min_letters: int
    table_end: str
    default_max_new_tokens: int
    table_prompt: str
    reference: Reference


@lru_cache(maxsize=2)
def load(path: str | None = None) -> VerifyConfig:
    """Parse verify.yaml (default: the packaged one).

    Raises:
        ConfigError: missing file, bad YAML, wrong schema or a bad regex.
    """
    p = Path(path) if path else paths.data_file("verify.yaml")
    data = paths.read_yaml(p, "the verify configuration")
    try:
        if data.get("schema") != 1:
            raise ValueError("expected schema: 1")
        o, t = data["outputs"], data["two-backend"]
        r = t["reference"]
        return VerifyConfig(
            latex=re.compile(o["latex-regex"]),
            readable_min_share=float(o["readable-min-share"]),
            replacement_max_share=float(o["replacement-max-share"]),
            min_letters=int(o["min-letters"]),
            table_end=t["table-end"],
            default_max_new_tokens=int(t["default-max-new-tokens"]),
            table_prompt=t["prompts"]["table"],
            reference=Reference(
                model=r["model"],
                image_size=tuple(r["image-size"]),
                prompt=r["prompt"],
                prompt_tokens=int(r["prompt-tokens"]),
                vision_tokens=int(r["vision-tokens"]),
                generated_tokens=int(r["generated-tokens"]),
                output_chars=int(r["output-chars"]),
                params_billion=float(r["params-billion"]),
                source=r["source"],
            ),
        )
    except (AttributeError, KeyError, TypeError, ValueError, re.error) as exc:
        raise ConfigError(f"{p}: invalid verify configuration ({exc})", "restore it from git") from exc
