"""Every rendered object validates offline; broken objects fail (kubernetes-validate, CRD, compose)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocrstack.deploying import kustomize, validate

OVERLAYS = ["dspark", "standard", "upstream", "replicas"]


def objects(deploy: Path, overlay: str = "dspark") -> dict[str, dict[str, Any]]:
    docs = kustomize.build(deploy / "k8s" / "overlays" / overlay)
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_validates(overlay: str, deploy: Path) -> None:
    objs = objects(deploy, overlay)
    assert {
        "Deployment/ocrstack-vllm",
        "Service/ocrstack-vllm",
        "Deployment/ocrstack-api",
        "Service/ocrstack-api",
        "RayJob/ocrstack-parse",
        "ServiceMonitor/ocrstack-api",
        "PodMonitor/ocrstack-vllm",
    } <= set(objs)
    for key, doc in objs.items():
        assert validate.validate_object(doc, deploy / "schemas") == [], key
    # the HPA and the database only where the api runs on PostgreSQL (issue 23)
    scaled = {"HorizontalPodAutoscaler/ocrstack-api", "StatefulSet/ocrstack-postgres"}
    assert (scaled <= set(objs)) if overlay == "replicas" else not (scaled & set(objs))


def _container(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["spec"]["template"]["spec"]["containers"][0]


def test_core_object_wrong_type_fails(deploy: Path) -> None:
    dep = copy.deepcopy(objects(deploy)["Deployment/ocrstack-vllm"])
    dep["spec"]["replicas"] = "two"
    (err,) = validate.validate_object(dep, deploy / "schemas")
    assert err.startswith("Deployment/ocrstack-vllm: spec.replicas:")


def test_core_object_unknown_field_fails_strict(deploy: Path) -> None:
    dep = copy.deepcopy(objects(deploy)["Deployment/ocrstack-vllm"])
    _container(dep)["startupprobe"] = _container(dep).pop("startupProbe")  # misspelt
    errors = validate.validate_object(dep, deploy / "schemas")
    assert errors and "startupprobe" in errors[0]


def test_hpa_without_target_fails(deploy: Path) -> None:
    hpa = copy.deepcopy(objects(deploy, "replicas")["HorizontalPodAutoscaler/ocrstack-api"])
    del hpa["spec"]["metrics"][0]["pods"]["target"]
    assert validate.validate_object(hpa, deploy / "schemas")


def test_rayjob_unknown_field_fails(deploy: Path) -> None:
    job = copy.deepcopy(objects(deploy)["RayJob/ocrstack-parse"])
    job["spec"]["shutdownAfterJobFinish"] = True  # the real field ends in "Finishes"
    errors = validate.validate_object(job, deploy / "schemas")
    assert any("shutdownAfterJobFinish" in e for e in errors)


def test_rayjob_worker_without_group_name_fails(deploy: Path) -> None:
    job = copy.deepcopy(objects(deploy)["RayJob/ocrstack-parse"])
    del job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"]
    errors = validate.validate_object(job, deploy / "schemas")
    assert any("groupName" in e for e in errors)


def test_service_monitor_wrong_type_fails(deploy: Path) -> None:
    sm = copy.deepcopy(objects(deploy)["ServiceMonitor/ocrstack-api"])
    sm["spec"]["endpoints"] = {"port": "http"}
    errors = validate.validate_object(sm, deploy / "schemas")
    assert any("spec.endpoints" in e for e in errors)


def test_pod_monitor_unknown_field_fails(deploy: Path) -> None:
    pm = copy.deepcopy(objects(deploy)["PodMonitor/ocrstack-vllm"])
    pm["spec"]["podMetricsEndpoints"][0]["paths"] = "/metrics"
    assert validate.validate_object(pm, deploy / "schemas")


def test_unknown_kind_fails(deploy: Path) -> None:
    doc = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    (err,) = validate.validate_object(doc, deploy / "schemas")
    assert "no schema" in err


def test_compose_validates_and_a_broken_one_fails(deploy: Path) -> None:
    doc = yaml.safe_load((deploy / "compose.yaml").read_text())
    assert validate.validate_compose(doc, deploy / "schemas") == []
    doc["services"]["vllm"]["deploy"]["resources"]["reservations"]["device"] = []
    errors = validate.validate_compose(doc, deploy / "schemas")
    assert errors and "device" in errors[0]


def test_gpu_limit_that_is_not_a_quantity_fails(deploy: Path) -> None:
    dep = copy.deepcopy(objects(deploy)["Deployment/ocrstack-vllm"])
    assert _container(dep)["resources"]["limits"]["nvidia.com/gpu"] == 1
    _container(dep)["resources"]["limits"]["nvidia.com/gpu"] = "one"
    (err,) = validate.validate_object(dep, deploy / "schemas")
    assert "resources.limits.nvidia.com/gpu: 'one' is not a quantity" in err
    _container(dep)["resources"]["limits"]["nvidia.com/gpu"] = "2"
    assert validate.validate_object(dep, deploy / "schemas") == []
