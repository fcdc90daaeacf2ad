"""Prompt sets: which instruction is sent with each layout-block crop, loaded from YAML data files.

Built-in sets live in ``ocrstack/data/prompts/<name>.yaml`` (``minicpm-ocr``,
``mineru-diffusion``); ``--prompts FILE`` loads a user file of the same shape::

    schema: 1
    name: my-model
    system: null                 # optional system message
    prompts:                     # prompt name -> text (+ provenance)
      text:  {text: "...", output: text, verified: false, note: "..."}
      table: {text: "...", output: otsl, verified: true, source: "guide 7"}
    categories:                  # every layout category -> prompt name or null (not sent)
      text: text
      table: table
      ...
    request:                     # optional: fields added to every request body, with provenance
      extra_body: {denoising_steps: 32, ...}   # e.g. MinerU-Diffusion's diffusion settings
      crop: {min_edge: 28, max_edge_ratio: 50} # optional crop fitting before encoding
      source: "..."

A prompt may also carry ``max_tokens`` (the generation length its model's own client uses);
the ``vlm`` layout provider sends it with the layout prompt, ``verify`` reports it.

Rule (issue 3): a prompt not taken from a published source carries
``verified: false`` and a ``note``; a ``verified: true`` prompt names its ``source``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocrstack.core import paths
from ocrstack.core.errors import InputError, UsageError
from ocrstack.parsing.types import Category

#: Allowed ``output`` kinds: how the assembly stage treats the answer.
OUTPUT_KINDS = ("text", "otsl", "latex", "html", "markdown", "layout")


@dataclass(frozen=True)
class Prompt:
    """One instruction: ``text`` sent after the image; ``output`` kind; provenance."""

    name: str
    text: str
    output: str = "text"
    verified: bool = False
    source: str = ""
    note: str = ""
    max_tokens: int | None = None


@dataclass(frozen=True)
class PromptSet:
    """A named set of prompts and the category -> prompt mapping.

    Attributes:
        name: set name (``minicpm-ocr``...).
        path: file it was loaded from.
        system: optional system message sent before the user turn.
        prompts: prompt name -> :class:`Prompt`.
        categories: category value (e.g. ``"table"``) -> prompt name, or None (block not sent).
        request: fields merged into every request body (``extra_body``: the diffusion settings
            of MinerU-Diffusion's client, issue 14); empty for most sets.
        request_source: where ``request`` comes from.
        crop: ``{"min_edge": int, "max_edge_ratio": int}`` or empty: crops are fitted with
            :func:`ocrstack.parsing.crops.resize_by_need` before they are sent.
    """

    name: str
    path: Path
    system: str | None
    prompts: dict[str, Prompt]
    categories: dict[str, str | None] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)
    request_source: str = ""
    crop: dict[str, int] = field(default_factory=dict)

    def for_category(self, category: Category | str) -> Prompt | None:
        """Return the prompt for a block category, or None when blocks of that category are not sent."""
        key = category.value if isinstance(category, Category) else str(category)
        name = self.categories.get(key)
        return self.prompts[name] if name else None

    def unverified(self) -> list[str]:
        """Names of the prompts marked ``verified: false``."""
        return [p.name for p in self.prompts.values() if not p.verified]


def builtin_names() -> list[str]:
    """Names of the prompt sets shipped in ``ocrstack/data/prompts/``."""
    return sorted(p.stem for p in paths.data_file("prompts").glob("*.yaml"))


def resolve(name_or_path: str | Path) -> Path:
    """Map a built-in set name or a file path to the YAML file.

    Raises:
        UsageError: neither a built-in name nor an existing file (lists the built-in names).
    """
    text = str(name_or_path)
    builtin = paths.data_file("prompts", f"{text}.yaml")
    if "/" not in text and "\\" not in text and not text.endswith((".yaml", ".yml")) and builtin.is_file():
        return builtin
    candidate = Path(text).expanduser()
    if candidate.is_file():
        return candidate.resolve()
    raise UsageError(
        f"--prompts '{text}' is neither a built-in prompt set nor an existing file",
        f"use one of: {', '.join(builtin_names())}, or the path of a YAML prompt file",
    )


def load(name_or_path: str | Path) -> PromptSet:
    """Load and validate a prompt set (built-in name or YAML path).

    Raises:
        UsageError: unknown name / missing file.
        InputError: the file is not valid YAML or not of the documented shape; the
            message names the file and the offending key.
    """
    path = resolve(name_or_path)
    data = paths.read_yaml(
        path, "the prompt file as YAML", "fix the YAML syntax (see ocrstack/data/prompts/minicpm-ocr.yaml)",
        error=InputError,
    )  # fmt: skip
    return _validate(data, path)


def default_categories(prompts: dict[str, Prompt]) -> dict[str, str | None]:
    """Mapping used for categories a file does not list: tables -> ``table``, formulas -> ``formula``
    (each falling back to ``text``), figures and abandoned regions -> not sent, the rest -> ``text``
    (None where the set has no such prompt)."""
    text = "text" if "text" in prompts else None
    out: dict[str, str | None] = {}
    for c in Category:
        if c in (Category.FIGURE, Category.ABANDON):
            out[c.value] = None
        elif c is Category.TABLE:
            out[c.value] = "table" if "table" in prompts else text
        elif c is Category.FORMULA:
            out[c.value] = "formula" if "formula" in prompts else text
        else:
            out[c.value] = text
    return out


def _bad(path: Path, what: str) -> InputError:
    return InputError(
        f"prompt file {path}: {what}",
        "follow the shape of ocrstack/data/prompts/minicpm-ocr.yaml (schema, name, prompts, categories)",
    )


def _validate(data: Any, path: Path) -> PromptSet:
    if not isinstance(data, dict):
        raise _bad(path, "top level must be a mapping")
    unknown = set(data) - {"schema", "name", "model", "system", "prompts", "categories", "request"}
    if unknown:
        raise _bad(path, f"unknown key(s) {sorted(unknown)}")
    if data.get("schema", 1) != 1:
        raise _bad(path, f"schema {data.get('schema')!r} is not supported (expected 1)")
    name = data.get("name") or path.stem
    system = data.get("system")
    if system is not None and not isinstance(system, str):
        raise _bad(path, "'system' must be a string or null")
    raw_prompts = data.get("prompts")
    if not isinstance(raw_prompts, dict) or not raw_prompts:
        raise _bad(path, "'prompts' must be a non-empty mapping of prompt name -> {text: ...}")
    prompts: dict[str, Prompt] = {}
    for pname, spec in raw_prompts.items():
        if isinstance(spec, str):
            spec = {"text": spec}
        if not isinstance(spec, dict):
            raise _bad(path, f"prompts.{pname} must be a string or a mapping with 'text'")
        extra = set(spec) - {"text", "output", "verified", "source", "note", "max_tokens"}
        if extra:
            raise _bad(path, f"prompts.{pname}: unknown key(s) {sorted(extra)}")
        text = spec.get("text")
        if not isinstance(text, str) or not text.strip():
            raise _bad(path, f"prompts.{pname}.text must be a non-empty string")
        output = spec.get("output", "text")
        if output not in OUTPUT_KINDS:
            raise _bad(path, f"prompts.{pname}.output '{output}' is not one of {list(OUTPUT_KINDS)}")
        verified = spec.get("verified", False)
        if not isinstance(verified, bool):
            raise _bad(path, f"prompts.{pname}.verified must be true or false")
        source, note = str(spec.get("source") or ""), str(spec.get("note") or "")
        if verified and not source:
            raise _bad(path, f"prompts.{pname} is marked verified but names no 'source'")
        if not verified and not note and not source:
            raise _bad(path, f"prompts.{pname} is unverified: add a 'note' saying where it comes from")
        max_tokens = spec.get("max_tokens")
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise _bad(path, f"prompts.{pname}.max_tokens must be a positive integer")
        prompts[str(pname)] = Prompt(str(pname), text, output, verified, source, note, max_tokens)
    raw_cats = data.get("categories") or {}
    if not isinstance(raw_cats, dict):
        raise _bad(path, "'categories' must be a mapping of layout category -> prompt name or null")
    valid = {c.value for c in Category}
    bad_cats = set(raw_cats) - valid
    if bad_cats:
        raise _bad(path, f"unknown categor(y/ies) {sorted(bad_cats)}; valid: {sorted(valid)}")
    categories = default_categories(prompts)
    for cat, target in raw_cats.items():
        if target is not None and target not in prompts:
            raise _bad(path, f"categories.{cat} -> '{target}' is not a prompt name ({sorted(prompts)})")
        categories[cat] = target
    if not any(categories.values()):
        raise _bad(path, "no category is mapped to a prompt: nothing would be recognised")
    request, request_source, crop = _request(data.get("request"), path)
    return PromptSet(str(name), path, system, prompts, categories, request, request_source, crop)


def _request(raw: Any, path: Path) -> tuple[dict[str, Any], str, dict[str, int]]:
    """``request:`` -> (body fields, source, crop fitting); only ``extra_body`` is a body field."""
    if raw is None:
        return {}, "", {}
    if not isinstance(raw, dict) or set(raw) - {"extra_body", "crop", "source", "note"}:
        raise _bad(path, "'request' must be a mapping with 'extra_body', 'crop', 'source' and 'note'")
    crop = raw.get("crop") or {}
    valid = isinstance(crop, dict) and set(crop) == {"min_edge", "max_edge_ratio"}
    if crop and not (valid and all(isinstance(v, int) and v > 0 for v in crop.values())):
        raise _bad(path, "request.crop needs positive integers 'min_edge' and 'max_edge_ratio'")
    body = raw.get("extra_body")
    if body is not None and not isinstance(body, dict):
        raise _bad(path, "request.extra_body must be a mapping")
    if body and not raw.get("source"):
        raise _bad(path, "request names no 'source' for its extra_body fields")
    return ({"extra_body": dict(body)} if body else {}), str(raw.get("source") or ""), dict(crop)
