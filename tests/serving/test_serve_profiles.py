"""Serve profiles vs the guide's own command blocks (guide 4.1-4.3), flag by flag.

The expected commands are parsed out of the guide text in shared/seeds at test time,
so the comparison is against the real document, not a copy.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from ocrstack import versions
from ocrstack.backends import profiles
from ocrstack.core.errors import ConfigError, UsageError

GUIDE_NAME = "seeds/000_a6ffb5c9f36940fa.txt"


def guide_command(guide: str, heading: str) -> list[str]:
    """Return the argv of the server command in the first ```bash block after ``heading``."""
    start = guide.index(heading)
    block = re.search(r"```bash\n(.*?)```", guide[start:], re.S)
    assert block, f"no bash block after {heading}"
    text = block.group(1).replace("\\\n", " ")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(("source ", "#"))]
    assert len(lines) == 1, lines
    argv = shlex.split(lines[0])
    while argv and re.match(r"^[A-Z_]+=", argv[0]):  # CUDA_VISIBLE_DEVICES=<空闲卡>
        argv.pop(0)
    return argv


def flag_pairs(argv: list[str], start: int) -> list[tuple[str, str | None]]:
    """Split argv[start:] into (flag, value-or-None) pairs."""
    out: list[tuple[str, str | None]] = []
    i = start
    while i < len(argv):
        flag = argv[i]
        assert flag.startswith("--"), f"unexpected positional {flag!r} in {argv}"
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out.append((flag, argv[i + 1]))
            i += 2
        else:
            out.append((flag, None))
            i += 1
    return out


@pytest.fixture(scope="module")
def guide(shared: Path) -> str:
    path = shared / GUIDE_NAME
    if not path.is_file():
        pytest.skip(f"guide not found at {path}")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def pset() -> profiles.ProfileSet:
    return profiles.load()


def _compare(ours: list[str], theirs: list[str], n_prog: int) -> None:
    assert ours[:n_prog] == theirs[:n_prog], "program differs"
    mine = flag_pairs(ours, n_prog)
    want = flag_pairs(theirs, n_prog)
    for (f1, v1), (f2, v2) in zip(mine, want, strict=False):
        assert f1 == f2, f"flag order/name differs: {f1} vs guide {f2}"
        assert v1 == v2, f"{f1}: {v1!r} vs guide {v2!r}"
    assert [f for f, _ in mine] == [f for f, _ in want]


@pytest.mark.parametrize(("name", "heading"), [("dspark", "### 4.1"), ("standard", "### 4.2")])
def test_vllm_profiles_match_guide_flag_by_flag(pset, guide, name: str, heading: str) -> None:
    theirs = guide_command(guide, heading)
    ours = pset.get(name).argv(listen=False)
    _compare(ours, theirs, n_prog=3)


@pytest.mark.parametrize("name", ["dspark", "standard"])
def test_vllm_profiles_bind_loopback_unless_asked(pset, name: str) -> None:
    # the guide's command has no --host, so vLLM would listen on every interface
    assert pset.get(name).argv()[-2:] == ["--host", "127.0.0.1"]
    assert pset.get(name).argv({"host": "0.0.0.0"})[-2:] == ["--host", "0.0.0.0"]


def test_tf_profile_matches_guide_when_host_is_asked(pset, guide) -> None:
    theirs = guide_command(guide, "### 4.3")
    ours = pset.get("tf").argv({"host": "0.0.0.0"})
    assert ours[:3] == theirs[:3]  # transformers serve MODEL
    _compare(ours, theirs, n_prog=3)


def test_tf_profile_binds_loopback_by_default(pset) -> None:
    argv = pset.get("tf").argv()
    assert argv[argv.index("--host") + 1] == "127.0.0.1"


def test_served_model_name_and_port_come_from_versions(pset) -> None:
    name = versions.pin("serve.served-model-name")
    port = str(versions.pin("serve.port"))
    for prof in ("dspark", "standard"):
        argv = pset.get(prof).argv()
        assert argv[argv.index("--served-model-name") + 1] == name
        assert argv[argv.index("--port") + 1] == port
    from ocrstack.versions.endpoints import default_model, default_server_url

    assert default_model() == name and default_server_url().endswith(f":{port}")


def test_overrides_reach_the_argv(pset) -> None:
    argv = pset.get("dspark").argv(
        {"model": "/m/main", "draft_model": "/m/draft", "port": 19000, "served_model_name": "x"}
    )
    assert argv[argv.index("--model") + 1] == "/m/main"
    assert argv[argv.index("--port") + 1] == "19000"
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {
        "method": "dspark",
        "model": "/m/draft",
        "num_speculative_tokens": 15,
        "enable_adaptive_verification": False,
    }


def test_json_flags_stay_valid(pset) -> None:
    with pytest.raises(UsageError, match="not valid JSON"):
        pset.get("dspark").argv({"draft_model": 'bad"path'})


def test_llamacpp_profile_passes_mmproj(pset) -> None:
    argv = pset.get("llamacpp").argv({"gguf": "m.gguf", "mmproj": "mmproj.gguf"})
    assert argv[0] == "llama-server"
    assert argv[argv.index("--mmproj") + 1] == "mmproj.gguf"
    assert argv[argv.index("--model") + 1] == "m.gguf"
    assert argv[argv.index("--alias") + 1] == versions.pin("serve.served-model-name")
    assert pset.get("llamacpp").build == "llama.cpp"


def test_builds_declared_and_upstream_accepts_trust_flag(pset) -> None:
    assert pset.get("dspark").build == "feat-ocr" and pset.get("standard").build == "feat-ocr"
    assert pset.get("tf").build == "transformers"
    # issue 14: the vLLM 0.33.0 parser defines --trust-request-mm-kwargs (test_profiles_engines.py)
    assert pset.builds["upstream"].unknown_flags == ()
    assert "5c2b92a5dc" in pset.builds["feat-ocr"].description  # {pin:...} substituted


def test_restart_policy_and_phases_are_data(pset) -> None:
    assert pset.restart.doctor_rules == ("cuda-graph-capture-stalled",)
    names = {p.name for p in pset.phases}
    assert {"CUDA graph capture", "FlashInfer JIT compilation"} <= names
    cap = next(p for p in pset.phases if p.name == "CUDA graph capture")
    assert cap.start.search("INFO gpu_model_runner.py:2318] Capturing CUDA graphs (mixed prefill-decode)")
    assert cap.end.search("INFO 10-19 gpu_model_runner.py:2410] Graph capturing finished in 21 secs")


def test_unknown_profile_lists_known(pset) -> None:
    with pytest.raises(UsageError, match="dspark"):
        pset.get("nope")


def test_bad_file_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    head = "schema: 1\nbuilds: {b: {engine: vllm}}\nprofiles:\n"
    bad.write_text(head + "  x: {build: zz, program: [a], args: []}\n")
    with pytest.raises(ConfigError, match="unknown build 'zz'"):
        profiles.load(bad)
    bad.write_text(head + "  x: {build: b, program: [a], args: [[x]]}\n")
    with pytest.raises(ConfigError, match=r"\[flag\]"):
        profiles.load(bad)


UPSTREAM_TWINS = [("dspark-upstream", "dspark"), ("standard-upstream", "standard")]


@pytest.mark.parametrize(("up", "fork"), UPSTREAM_TWINS)
def test_upstream_profiles_differ_from_feat_ocr_only_in_rejected_flags(pset, up: str, fork: str) -> None:
    upstream, feat = pset.get(up), pset.get(fork)
    assert upstream.build == "upstream" and feat.build == "feat-ocr"
    ours, theirs = upstream.argv(), feat.argv()
    rejected = set(pset.builds["upstream"].unknown_flags)
    assert [a for a in theirs if a not in rejected] == ours  # only rejected flags may go, order kept
    assert not rejected & set(ours)
    assert "--trust-request-mm-kwargs" in ours  # issue 14: 0.33.0 defines it; parse/verify need it
    assert upstream.speculative == feat.speculative
    assert upstream.served_model() == feat.served_model()
    assert upstream.required_files == feat.required_files
    assert upstream.enforce_eager_flag == feat.enforce_eager_flag


def test_speculative_is_derived_from_the_speculative_config(pset) -> None:
    spec = {name for name, p in pset.profiles.items() if p.speculative}
    assert spec == {name for name, p in pset.profiles.items() if "--speculative-config" in p.argv()}
    assert {"dspark", "dspark-upstream"} <= spec and "standard" not in spec


def test_every_profile_renders_and_names_a_known_build(pset) -> None:
    for name, prof in pset.profiles.items():
        argv = prof.argv({"gguf": "m.gguf", "mmproj": "p.gguf"})
        assert argv[0] == prof.program[0], name
        assert prof.build in pset.builds, name


def test_a_speculative_key_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text(
        "schema: 1\nbuilds: {b: {engine: vllm}}\nprofiles:\n"
        "  x: {build: b, program: [a], args: [[--model, m]], speculative: true}\n"
    )
    with pytest.raises(ConfigError, match="implied by a --speculative-config"):
        profiles.load(bad)
