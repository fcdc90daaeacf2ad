"""Checks only a deployment kit can make: its own pins and data files agree with each other (issue 14).

Pure functions over envs/versions.yaml pins and the packaged data files (read as plain YAML here,
since preflight imports no other stage):

- :func:`check_engine_transformers` -- vLLM ``upstream.vllm`` requires transformers
  ``upstream.vllm-transformers-pin`` (the 0.33.0 wheel: ``transformers<5.21.0,>=5.16.1``) while
  ``minicpm_ocr`` first ships in transformers 5.21.0 (``upstream.transformers``). No release
  satisfies both: the prebuilt path installs vLLM, then transformers ``--no-deps``, and ``pip
  check`` reports that one conflict on purpose (building/plan.py, building/pipcheck.py). With a
  found ``vllm`` environment its installed versions are judged too.
- :func:`check_draft_release` -- every DSpark draft in models.yaml names its main model, and each
  speculative serve profile's default ``--model`` / draft paths are that pair (guide 3.4: main
  model and draft from one release, never mixed).
- :func:`check_served_names` -- the name each serve profile answers to equals the name ``parse``
  sends by default (``serve.served-model-name``, guide 4.1), or the profile says which one to send.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePosixPath
from string import Template
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from ocrstack import versions
from ocrstack.backends import profiles as profiles_mod
from ocrstack.backends.profiles import Profile
from ocrstack.core import paths
from ocrstack.core.results import Check, Status
from ocrstack.preflight.facts import PythonEnv

#: First transformers release with the minicpm_ocr model type (issue 14, read from the wheels).
MINICPM_OCR_FIRST = "5.21.0"


def _satisfies(version: str, spec: str) -> bool:
    try:
        return Version(version) in SpecifierSet(spec)
    except InvalidVersion:
        return False


def check_engine_transformers(
    vllm_pin: str, vllm_needs: str, model_needs: str, env: PythonEnv | None
) -> Check:
    """Judge the vLLM/transformers pins (and a found environment's installed versions).

    Args:
        vllm_pin: ``upstream.vllm`` (``"0.33.0"``); vllm_needs: vLLM's own transformers range
        (``upstream.vllm-transformers-pin``); model_needs: the range with minicpm_ocr
        (``upstream.transformers``); env: the ``vllm`` environment's probe, or None.
    Returns:
        FAIL when the pins could not hold minicpm_ocr or the environment's transformers lacks it;
        WARN (the expected, explained conflict) otherwise.
    """
    if not _satisfies(MINICPM_OCR_FIRST, model_needs):
        return Check(
            "engine-transformers",
            Status.FAIL,
            f"upstream.transformers {model_needs} excludes {MINICPM_OCR_FIRST}, the first with minicpm_ocr",
            "set upstream.transformers to >=5.21 in envs/versions.yaml",
        )
    trap = (
        f"vllm {vllm_pin} requires transformers{vllm_needs}, minicpm_ocr needs {model_needs}: no release "
        "satisfies both, so the prebuilt path installs vllm, then transformers --no-deps, and pip check "
        "reports that conflict on purpose"
    )
    fix = (
        "use `ocrstack build vllm-prebuilt` (pixi run -e vllm install-vllm-prebuilt; it installs in "
        "that order); never `pip install -U vllm` afterwards"
    )
    if env is None or env.vllm is None:
        return Check(
            "engine-transformers", Status.WARN, trap + " (no vllm environment found to inspect)", fix
        )
    if env.transformers is None or not _satisfies(env.transformers, model_needs):
        return Check(
            "engine-transformers",
            Status.FAIL,
            f"{env.name}: vllm {env.vllm} with transformers {env.transformers}: minicpm_ocr is unknown "
            f"there ('model type minicpm_ocr ... does not recognize this architecture')",
            f"{env.interpreter} -m pip install --no-deps 'transformers{model_needs}'",
            expected=model_needs,
            found=env.transformers,
        )
    return Check(
        "engine-transformers",
        Status.WARN,
        f"{env.name}: vllm {env.vllm} + transformers {env.transformers}: as intended; {trap}",
        fix,
    )


def check_draft_release(catalog: dict[str, Any], profiles: Mapping[str, Profile]) -> Check:
    """Drafts name an existing main model, and speculative profiles default to that pair.

    ``catalog`` is models.yaml's ``models`` mapping, ``profiles`` the loaded serve profiles
    (:func:`ocrstack.backends.profiles.load`).
    """
    problems: list[str] = []
    for name, m in catalog.items():
        if m.get("kind") == "draft" and catalog.get(m.get("main"), {}).get("kind") != "main":
            problems.append(f"draft {name} names main model {m.get('main')!r}, which models.yaml lacks")
    for pname, p in profiles.items():
        spec = next((a[1] for a in p.args if a[0] == "--speculative-config" and len(a) > 1), None)
        if spec is None:
            continue
        values = dict(p.vars)
        draft_path = json.loads(Template(spec).safe_substitute(values)).get("model", "")
        model_path = next((Template(a[1]).safe_substitute(values) for a in p.args if a[0] == "--model"), "")
        draft, main = PurePosixPath(draft_path).name, PurePosixPath(model_path).name
        if catalog.get(draft, {}).get("main") != main:
            problems.append(
                f"profile {pname}: draft {draft!r} is not the DSpark draft of {main!r} in models.yaml"
            )
    if problems:
        return Check(
            "draft-release",
            Status.FAIL,
            "; ".join(problems),
            "pair each draft with its main model (guide 3.4: same release, never mixed)",
        )
    return Check("draft-release", Status.PASS, "every DSpark draft and speculative profile pairs one release")


def check_served_names(profiles: Mapping[str, Profile], parse_default: str, pins: dict[str, str]) -> Check:
    """Each profile's served name equals ``--served-model-name``/``--alias`` and parse's default name.

    A profile whose served name is not parse's default (``transformers serve`` answers to the model
    path) is a WARN naming the ``--model`` value parse must be given.
    """
    bad: list[str] = []
    other: list[str] = []
    for name, p in profiles.items():
        values = {**pins, **p.vars}
        served = Template(p.served_name).safe_substitute(values)
        for a in p.args:
            if a[0] in ("--served-model-name", "--alias") and len(a) > 1:
                flag_value = Template(a[1]).safe_substitute(values)
                if flag_value != served:
                    bad.append(f"{name}: {a[0]} {flag_value} but served-name {served}")
        if served != parse_default:
            other.append(f"{name} (parse --model {served})")
    if bad:
        return Check(
            "served-name",
            Status.FAIL,
            "; ".join(bad),
            "make served-name match the flag in serve_profiles.yaml",
        )
    detail = f"parse sends {parse_default!r} (serve.served-model-name)"
    if other:
        return Check(
            "served-name",
            Status.WARN,
            detail + "; these answer to another name: " + ", ".join(other),
            "pass that --model to parse/verify when using those profiles",
        )
    return Check("served-name", Status.PASS, detail + "; every profile answers to it")


def deployment_checks(envs: list[PythonEnv]) -> list[Check]:
    """The three checks above on this checkout's pins and data files (``vllm`` env from ``envs``)."""
    up = versions.pin("upstream")
    vllm_env = next((e for e in envs if e.name == "vllm" and e.vllm), None)
    catalog = paths.read_yaml(paths.data_file("models.yaml"), "model catalog").get("models") or {}
    profiles = profiles_mod.load().profiles
    default = str(versions.pin("serve.served-model-name"))
    pins = {"served_model_name": default, "port": str(versions.pin("serve.port"))}
    return [
        check_engine_transformers(
            str(up["vllm"]), str(up["vllm-transformers-pin"]), str(up["transformers"]), vllm_env
        ),
        check_draft_release(catalog, profiles),
        check_served_names(profiles, default, pins),
    ]
