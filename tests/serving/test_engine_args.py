"""Unit tests for ocrstack.serving.engine_args: judging probe answers, no engine installed.

The probe answers here are written by hand in the shape engine_probe.py prints (a fake parser);
the real parsers run in test_profiles_engines.py (network).
"""

from __future__ import annotations

import json

import pytest

from ocrstack.backends import profiles
from ocrstack.backends.profiles import Profile
from ocrstack.serving import engine_args


@pytest.fixture(scope="module")
def pset() -> profiles.ProfileSet:
    return profiles.load()


def _answer(profile: Profile, options: list[str], error: str | None = None, spec=None) -> dict:
    out = {
        "engine": "vllm",
        "release": "0.33.0",
        "options": options,
        "results": {profile.name: {"error": error}},
    }
    if spec:
        out["speculative"] = spec
    return out


def _typo(profile: Profile, old: str, new: str) -> Profile:
    args = tuple((new, *a[1:]) if a[0] == old else a for a in profile.args)
    return Profile(**{**profile.__dict__, "args": args})


def test_exact_option_strings_only() -> None:
    opts = ["--max-model-len", "--port"]
    assert engine_args.unknown_flags(["--port", "--max-model-len=5"], opts) == []
    # argparse would take --max-model as an abbreviation; the data file must spell the flag out
    assert engine_args.unknown_flags(["--max-model", "--prot"], opts) == ["--max-model", "--prot"]


def test_misspelled_flag_is_named_with_a_fake_parser(pset) -> None:
    good = pset.get("standard-upstream")
    options = engine_args.profile_flags(good)  # a fake parser that knows exactly the profile's flags
    engine = engine_args.Engine("vllm", "vllm", "0.33.0", how="fake")
    assert engine_args.judge(good, engine, _answer(good, options)).ok
    bad = _typo(good, "--gpu-memory-utilization", "--gpu-memory-utilisation")
    check = engine_args.judge(bad, engine, _answer(bad, options, error="unrecognized arguments"))
    assert not check.ok and check.unknown == ["--gpu-memory-utilisation"]
    assert "unknown flag --gpu-memory-utilisation" in check.describe()


def test_speculative_config_keys_against_fields(pset) -> None:
    p = pset.get("dspark-upstream")
    fields = ["method", "model", "num_speculative_tokens", "enable_adaptive_verification"]
    assert engine_args.speculative_problems(p, fields, ["dspark", "eagle"]) == []
    probs = engine_args.speculative_problems(p, fields[:-1], ["eagle"])
    assert any("enable_adaptive_verification" in m for m in probs)
    assert any("method 'dspark'" in m for m in probs)
    assert engine_args.speculative_problems(pset.get("standard"), [], []) == []


def test_help_options_reads_click_pairs() -> None:
    text = "  --continuous-batching / --no-continuous-batching\n  --port INTEGER  [default: 8000]\n"
    assert engine_args.help_options(text) == ["--continuous-batching", "--no-continuous-batching", "--port"]


def test_profile_argv_adds_the_restart_flag(pset) -> None:
    p = pset.get("standard-upstream")
    argv = engine_args.profile_argv(p)
    assert argv[0] == "--model" and argv[-1] == "--enforce-eager"
    assert json.loads(argv[argv.index("--limit-mm-per-prompt") + 1]) == {"image": 36}


@pytest.mark.parametrize("engine", ["vllm", "sglang", "transformers"])
def test_every_engine_checked_profile_records_each_flag(pset, engine: str) -> None:
    """Each flag of a vLLM/SGLang/transformers profile has a `checked:` entry naming the release."""
    release = engine_args.engines()[engine].release
    names = [n for n, p in pset.profiles.items() if pset.builds[p.build].engine == engine]
    assert names
    for name in names:
        p = pset.get(name)
        assert set(p.checked) == set(engine_args.profile_flags(p)), name
        assert all(v.startswith(f"{engine} {release} ") for v in p.checked.values()), name


def test_checked_for_a_flag_not_passed_is_refused(tmp_path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text(
        "schema: 1\nbuilds: {b: {engine: vllm}}\nprofiles:\n"
        "  x: {build: b, program: [a], args: [[--port, '1']], checked: {--prot: vllm 0.33.0 x}}\n"
    )
    with pytest.raises(profiles.ConfigError, match="--prot"):
        profiles.load(bad)
