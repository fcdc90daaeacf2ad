"""``verify`` reports the request settings a parse sent beyond prompt and image (issue 14).

For MinerU-Diffusion these are the diffusion decoding settings of the repository's client
(``extra_body``: denoising_steps, block_length, denoising_strategy, dynamic_threshold) and the
per-prompt generation lengths, all from the prompt set named in ``NAME.blocks.json``
(``model.prompts`` or ``settings.prompts``; data in ``ocrstack/data/prompts/<set>.yaml``).
"""

from __future__ import annotations

import json
from pathlib import Path

from ocrstack.core import paths
from ocrstack.core.errors import OcrstackError
from ocrstack.core.results import Check, Status


def prompt_set_of(blocks: Path) -> str | None:
    """The prompt set a parse used, from its blocks file; None when absent or unreadable."""
    try:
        data = json.loads(blocks.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    for where in ("model", "settings"):
        section = data.get(where)
        if isinstance(section, dict) and section.get("prompts"):
            return str(section["prompts"])
    return None


def _prompt_file(name: str) -> Path | None:
    """The YAML of prompt set ``name``: a built-in set or an existing file path; None otherwise."""
    builtin = paths.data_file("prompts", f"{name}.yaml")
    if builtin.is_file():
        return builtin
    candidate = Path(name).expanduser()
    return candidate if candidate.is_file() else None


def request_settings_check(blocks: Path) -> Check | None:
    """One ``output:request-settings`` check (PASS, informational) listing the prompt set's extra
    request fields (``request.extra_body``, ``request.crop``) and per-prompt ``max_tokens``; None
    when the set has none of them or cannot be read.

    The prompt file is read as data here (verify does not import the parse stage); its shape is
    validated by :mod:`ocrstack.parsing.recognition.openai.prompts` when a parse loads it.
    """
    name = prompt_set_of(blocks)
    path = _prompt_file(name) if name else None
    if path is None:
        return None
    try:
        data = paths.read_yaml(path, "the prompt file")
    except OcrstackError:
        return None
    if not isinstance(data, dict):
        return None
    request = data.get("request") if isinstance(data.get("request"), dict) else {}
    raw_prompts = data.get("prompts") if isinstance(data.get("prompts"), dict) else {}
    lengths = {
        k: p["max_tokens"] for k, p in raw_prompts.items() if isinstance(p, dict) and p.get("max_tokens")
    }
    parts = []
    for key in ("extra_body", "crop"):
        value = request.get(key)
        if isinstance(value, dict) and value:
            parts.append(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
    if lengths:
        parts.append("max_tokens per prompt: " + ", ".join(f"{k}={v}" for k, v in lengths.items()))
    if not parts:
        return None
    source = f" (source: {request['source']})" if request.get("source") else ""
    detail = f"prompt set {data.get('name') or name}: " + "; ".join(parts) + source
    return Check("output:request-settings", Status.PASS, detail)
