"""``verify`` reports the request settings a parse sent beyond prompt and image (issue 14).

For MinerU-Diffusion these are the diffusion decoding settings of the repository's client
(``extra_body``: denoising_steps, block_length, denoising_strategy, dynamic_threshold) and the
per-prompt generation lengths, all from the prompt set named in ``NAME.blocks.json``
(``model.prompts`` or ``settings.prompts``; data in ``ocrstack/data/prompts/<set>.yaml``).
"""

from __future__ import annotations

import json
from pathlib import Path

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


def request_settings_check(blocks: Path) -> Check | None:
    """One ``output:request-settings`` check (PASS, informational) listing the prompt set's extra
    request fields and per-prompt ``max_tokens``; None when the set has neither or is unknown."""
    from ocrstack.parsing.recognition import prompts

    name = prompt_set_of(blocks)
    if not name:
        return None
    try:
        ps = prompts.load(name)
    except OcrstackError:
        return None
    lengths = {k: p.max_tokens for k, p in ps.prompts.items() if p.max_tokens}
    if not ps.request and not lengths:
        return None
    parts = []
    for key, value in ps.request.items():
        fields = ", ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else str(value)
        parts.append(f"{key}: {fields}")
    if lengths:
        parts.append("max_tokens per prompt: " + ", ".join(f"{k}={v}" for k, v in lengths.items()))
    source = f" (source: {ps.request_source})" if ps.request_source else ""
    detail = f"prompt set {ps.name}: " + "; ".join(parts) + source
    return Check("output:request-settings", Status.PASS, detail)
