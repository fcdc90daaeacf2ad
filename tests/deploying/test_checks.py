"""hadolint, pixi references, and `ocrstack deploy check` failing on a broken manifest (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.cli import build_parser, main
from ocrstack.core.errors import CheckFailed
from ocrstack.core.results import Status
from ocrstack.deploying import checks, kustomize


@pytest.mark.proc
def test_hadolint_passes_on_deploy_dockerfiles(deploy: Path) -> None:
    files = sorted((deploy / "docker").glob("*.Dockerfile"))
    assert {f.name for f in files} == {"sdk.Dockerfile", "vllm.Dockerfile", "vllm-build.Dockerfile"}
    assert checks.lint(files) == []


@pytest.mark.proc
def test_hadolint_fails_on_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "bad.Dockerfile"
    bad.write_text("FROM ubuntu:latest\nRUN apt-get install curl\nCMD python app.py\n")
    found = "\n".join(checks.lint([bad]))
    assert "DL3007" in found  # :latest
    assert "DL3025" in found  # CMD not in JSON form


def test_dockerfile_pixi_references_exist(deploy: Path, repo: Path) -> None:
    manifest = checks.pixi_manifest(repo)
    for f in sorted((deploy / "docker").glob("*.Dockerfile")):
        text = f.read_text()
        assert "pixi install --locked -e" in text, f.name
        assert checks.pixi_references(text, manifest) == [], f.name
        missing, _generated = checks.copy_sources(text, repo)
        assert missing == [], f.name


def test_unknown_pixi_env_and_task_are_reported(repo: Path) -> None:
    manifest = checks.pixi_manifest(repo)
    text = (
        "RUN pixi install --locked -e nope\n"
        "RUN pixi run -e vllm no-such-task\n"
        "RUN pixi run -e sdk build-vllm\n"
    )
    assert checks.pixi_references(text, manifest) == [
        "pixi environment 'nope' is not in pixi.toml [environments]",
        "pixi task 'no-such-task' is not defined for environment 'vllm'",
        "pixi task 'build-vllm' is not defined for environment 'sdk'",
    ]


@pytest.mark.proc
def test_deploy_check_passes_on_the_checkout(deploy: Path) -> None:
    report = checks.run_all(build_parser(), deploy)
    assert report.ok, report.to_text()
    names = [c.name for c in report.checks]
    assert names[0] == "hadolint" and "compose" in names
    assert {f"k8s:{o}" for o in ("dspark", "standard", "upstream", "replicas")} <= set(names)
    assert "overlay-args:replicas" not in names  # no serve profile of its own
    assert all(c.status is Status.PASS for c in report.checks if c.name.startswith("k8s:"))


@pytest.mark.proc
def test_deploy_check_fails_on_a_broken_manifest(
    deploy_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hpa = deploy_copy / "k8s" / "overlays" / "replicas" / "api-hpa.yaml"
    hpa.write_text(hpa.read_text().replace("maxReplicas: 8", "maxReplicas: eight"))
    with pytest.raises(
        CheckFailed, match=r"k8s:replicas: HorizontalPodAutoscaler/ocrstack-api: spec\.maxReplicas"
    ):
        checks.run_all(build_parser(), deploy_copy).raise_if_failed("deploy check")
    assert main(["deploy", "--deploy-dir", str(deploy_copy), "check"]) != 0
    assert "[   fail] k8s:replicas" in capsys.readouterr().out


def test_scaling_over_sqlite_is_refused(deploy: Path) -> None:
    base = kustomize.build(deploy / "k8s" / "overlays" / "dspark")
    replicas = kustomize.build(deploy / "k8s" / "overlays" / "replicas")
    assert checks.scaling_problems(base) == [] and checks.scaling_problems(replicas) == []
    for d in replicas:  # the replicas overlay without its database: SQLite under an HPA
        if d["kind"] == "Deployment" and d["metadata"]["name"] == "ocrstack-api":
            d["spec"]["template"]["spec"]["containers"][0]["env"] = []
    assert checks.scaling_problems(replicas) == [
        "Deployment/ocrstack-api: replicas 2 over the SQLite job store",
        "Deployment/ocrstack-api: strategy must be Recreate over the SQLite job store",
        "HorizontalPodAutoscaler/ocrstack-api scales ocrstack-api, which keeps its jobs in SQLite",
    ]
    for d in base:  # a rolling update would open one SQLite file from two pods
        if d["kind"] == "Deployment" and d["metadata"]["name"] == "ocrstack-api":
            del d["spec"]["strategy"]
    assert checks.scaling_problems(base) == [
        "Deployment/ocrstack-api: strategy must be Recreate over the SQLite job store"
    ]


@pytest.mark.proc
def test_deploy_check_fails_on_drifted_args_and_short_startup_probe(deploy_copy: Path) -> None:
    patch = deploy_copy / "k8s" / "overlays" / "upstream" / "server-args.yaml"
    patch.write_text(
        patch.read_text().replace("- --max-num-seqs\n        - '1'", "- --max-num-seqs\n        - '4'")
    )
    base = deploy_copy / "k8s" / "base" / "vllm-deployment.yaml"
    base.write_text(base.read_text().replace("failureThreshold: 60", "failureThreshold: 6"))
    failed = {c.name: c.detail for c in checks.run_all(build_parser(), deploy_copy).failures()}
    assert "stale" in failed["overlay-args:upstream"]
    assert "startupProbe allows 60 s" in failed["k8s:dspark"]


@pytest.mark.proc
def test_deploy_check_fails_on_a_bad_dockerfile(deploy_copy: Path) -> None:
    (deploy_copy / "docker" / "extra.Dockerfile").write_text("FROM ubuntu:latest\nRUN pixi install -e nope\n")
    failed = {c.name: c.detail for c in checks.run_all(build_parser(), deploy_copy).failures()}
    assert "DL3007" in failed["hadolint"]
    assert "'nope'" in failed["pixi-references"]


def test_every_ocrstack_command_is_found(deploy: Path) -> None:
    from ocrstack.deploying import kustomize

    calls = checks.ocrstack_calls(deploy, kustomize.build(deploy / "k8s" / "overlays" / "dspark"))
    where = {w for w, _ in calls}
    assert {"Deployment/ocrstack-api container api", "RayJob/ocrstack-parse", "compose api",
            "sdk.Dockerfile CMD"} <= where  # fmt: skip
    api = dict(calls)["Deployment/ocrstack-api container api"]
    assert api[:3] == ["ocrstack", "api", "serve"]
    assert checks.cli_error(api, build_parser()) is None


def test_a_wrong_api_flag_is_an_error(deploy_copy: Path) -> None:
    api = deploy_copy / "k8s" / "base" / "api-deployment.yaml"
    api.write_text(api.read_text().replace("- --data-dir", "- --data-directory"))
    from ocrstack.deploying import kustomize

    docs = kustomize.build(deploy_copy / "k8s" / "overlays" / "dspark")
    errors = checks.cli_problems(deploy_copy, docs, build_parser())
    assert len(errors) == 1 and "--data-directory" in errors[0]
    assert errors[0].startswith("Deployment/ocrstack-api container api:")


def test_dockerignore_lets_every_copy_source_through(deploy: Path) -> None:
    for f in sorted((deploy / "docker").glob("*.Dockerfile")):
        allowed = {ln[1:] for ln in Path(f"{f}.dockerignore").read_text().splitlines() if ln.startswith("!")}
        sources = {s for group in checks._COPY.findall(f.read_text()) for s in group.split()}
        assert sources and sources <= allowed, f.name
