"""Every serve profile parsed by its engine's own argument parser (issue 14; `nox -s engines`).

vLLM envs.upstream.vllm and SGLang engine-check.sglang are installed --no-deps from PyPI into
<cache>/<engine>-<release> (reused across runs), outside the checkout: $OCRSTACK_ENGINES_CACHE, else
$XDG_CACHE_HOME/ocrstack/engines (~/.cache/ocrstack/engines); transformers is the running
environment's `transformers serve --help`. llama.cpp is not on PyPI and is not checked here.
Network: skipped unless selected with -m network (nox -s engines; .ci/run runs it as its own step).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ocrstack.backends import profiles
from ocrstack.serving import engine_args

pytestmark = [pytest.mark.network, pytest.mark.slow]

CACHE = Path(
    os.environ.get("OCRSTACK_ENGINES_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ocrstack" / "engines"
)
PSET = profiles.load()
CHECKED = [
    n for n, p in PSET.profiles.items() if PSET.builds[p.build].engine in ("vllm", "sglang", "transformers")
]


@pytest.fixture(scope="module")
def results() -> dict[str, engine_args.ProfileCheck]:
    try:
        engine_args._uv()  # skip with the reason rather than fail on a missing tool
    except engine_args.EnvironmentMismatch as exc:
        pytest.skip(str(exc))
    return {c.profile: c for c in engine_args.check_profiles(PSET, CACHE, CHECKED)}


@pytest.mark.parametrize("name", CHECKED)
def test_profile_parses_under_its_engine(results, name: str) -> None:
    check = results[name]
    print(check.describe())
    assert check.ok, check.describe()
    # the data file's record names the release that did the parsing
    assert all(v.startswith(f"{check.engine} {check.release} ") for v in PSET.get(name).checked.values())


def test_misspelled_flag_fails_under_the_real_parser(results) -> None:
    """The real vLLM parser names a misspelled flag (proof that a typo cannot pass)."""
    good = PSET.get("standard-upstream")
    args = tuple(
        ("--gpu-memory-utilisation", *a[1:]) if a[0] == "--gpu-memory-utilization" else a for a in good.args
    )
    bad = profiles.Profile(**{**good.__dict__, "name": "typo", "args": args})
    engine = engine_args.engines()["vllm"]
    python = engine_args.ensure_env(engine, CACHE)
    check = engine_args.judge(
        bad, engine, engine_args.run_probe(python, engine, {"typo": engine_args.profile_argv(bad)})
    )
    print(check.describe())
    assert check.unknown == ["--gpu-memory-utilisation"]
    assert check.error and "--gpu-memory-utilisation" in check.error


def test_vllm_wheel_pins_what_versions_yaml_says(results) -> None:
    """The trap preflight explains is real in the wheel: its transformers range is
    upstream.vllm-transformers-pin (so excludes 5.21.0, the first minicpm_ocr release), and it
    registers minicpm_ocr and dspark."""
    from packaging.specifiers import SpecifierSet

    from ocrstack import versions

    engine = engine_args.engines()["vllm"]
    venv = engine_args.ensure_env(engine, CACHE).parent.parent
    reqs = engine_args._engine_requirements(venv, "vllm")
    wheel = SpecifierSet(reqs["transformers"].removeprefix("transformers"))
    pinned = SpecifierSet(str(versions.pin("upstream.vllm-transformers-pin")))
    probes = ["5.16.1", "5.20.9", "5.21.0", "5.23.0"]
    assert [v in wheel for v in probes] == [v in pinned for v in probes] == [True, True, False, False]
    site = next(venv.glob("lib/python*/site-packages/vllm"))
    assert '"minicpm_ocr"' in (site / "model_executor/models/registry.py").read_text()
    assert '"dspark"' in (site / "config/speculative.py").read_text()
