"""The server container args equal `ocrstack serve --profile P --dry-run` (issue 13: no drift)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from ocrstack.backends import profiles
from ocrstack.cli import main
from ocrstack.deploying import kustomize, servers


def dry_run_argv(profile: str, values: dict[str, str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The `# command:` line of `ocrstack serve --dry-run`, split like a shell would."""
    flags = {"model": "--model", "draft_model": "--draft-model", "host": "--host"}
    argv = ["serve", "--profile", profile, "--dry-run", "--gpu", "0"]
    for key, value in values.items():
        argv += [flags[key], value]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    return shlex.split(lines[lines.index("# command:") + 1])


@pytest.mark.parametrize("overlay", ["dspark", "standard", "upstream"])
def test_overlay_args_equal_serve_dry_run(
    overlay: str, deploy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    targets = servers.load_targets(deploy)
    profile = targets.overlays[overlay]
    docs = kustomize.build(deploy / "k8s" / "overlays" / overlay)
    (dep,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "ocrstack-vllm"]
    (container,) = [c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == "vllm"]
    known = profiles.load().get(profile).variables()
    expected = dry_run_argv(profile, {k: v for k, v in targets.vars.items() if k in known}, capsys)
    assert container["command"] == ["/entrypoint.sh"]
    args = container["args"]
    # serve resolves the program on the host; the image resolves the same bare name on its PATH
    assert Path(expected[0]).name == args[0]
    assert args[1:] == expected[1:]
    assert "--host" in args and args[args.index("--host") + 1] == "0.0.0.0"


def test_overlays_cover_three_profiles(deploy: Path) -> None:
    targets = servers.load_targets(deploy)
    assert targets.overlays == {"dspark": "dspark", "standard": "standard", "upstream": "dspark-upstream"}


@pytest.mark.parametrize("overlay", ["dspark", "standard", "upstream"])
def test_committed_patch_equals_fresh_render(overlay: str, deploy: Path) -> None:
    targets = servers.load_targets(deploy)
    committed = (deploy / "k8s" / "overlays" / overlay / servers.PATCH_FILE).read_text(encoding="utf-8")
    assert committed == servers.overlay_patch_text(overlay, targets), "run `ocrstack deploy sync`"


def test_compose_command_equals_serve_dry_run(deploy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    targets = servers.load_targets(deploy)
    compose = yaml.safe_load((deploy / "compose.yaml").read_text(encoding="utf-8"))
    expected = dry_run_argv(targets.compose, targets.vars, capsys)
    command = compose["services"]["vllm"]["command"]
    assert Path(expected[0]).name == command[0]
    assert command[1:] == expected[1:]


def test_sync_rewrites_a_stale_patch(deploy_copy: Path) -> None:
    patch = deploy_copy / "k8s" / "overlays" / "standard" / servers.PATCH_FILE
    patch.write_text(patch.read_text().replace("'0.85'", "'0.95'"))
    changed = servers.sync(deploy_copy)
    assert changed == [patch]
    assert "'0.85'" in patch.read_text() and "'0.95'" not in patch.read_text()
    assert servers.sync(deploy_copy) == []


def test_deploy_k8s_writes_rendered_overlays(tmp_path: Path, deploy: Path) -> None:
    assert main(["deploy", "k8s", "--overlay", "upstream", "-o", str(tmp_path)]) == 0
    docs = list(yaml.safe_load_all((tmp_path / "upstream.yaml").read_text()))
    assert docs == kustomize.build(deploy / "k8s" / "overlays" / "upstream")
    assert [p.name for p in tmp_path.iterdir()] == ["upstream.yaml"]


def test_deploy_k8s_unknown_overlay_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy", "k8s", "--overlay", "gpu-cluster"]) != 0
    assert "unknown overlay 'gpu-cluster'" in capsys.readouterr().err
