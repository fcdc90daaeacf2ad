"""The Python kustomize subset: strategic merge, images, refused keys and patch targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.core.errors import ConfigError
from ocrstack.deploying import kustomize


def test_merge_by_name_and_replace_scalar_lists() -> None:
    base = {"containers": [{"name": "a", "image": "x", "args": ["1", "2"]}, {"name": "b", "image": "y"}]}
    patch = {"containers": [{"name": "a", "args": ["3"]}, {"name": "c", "image": "z"}]}
    out = kustomize.strategic_merge(base, patch)
    assert out == {
        "containers": [
            {"name": "a", "image": "x", "args": ["3"]},
            {"name": "b", "image": "y"},
            {"name": "c", "image": "z"},
        ]
    }
    assert base["containers"][0]["args"] == ["1", "2"], "inputs must stay untouched"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
        - {name: app, image: "org/app:1.0", args: [old]}
"""


def test_overlay_patch_and_image(tmp_path: Path) -> None:
    _write(tmp_path / "base" / "d.yaml", DEPLOY)
    _write(tmp_path / "base" / "kustomization.yaml", "resources: [d.yaml]\n")
    _write(
        tmp_path / "o" / "p.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
        "spec: {template: {spec: {containers: [{name: app, args: [new, x]}]}}}\n",
    )
    _write(
        tmp_path / "o" / "kustomization.yaml",
        "resources: [../base]\npatches: [{path: p.yaml}]\nimages: [{name: org/app, newName: org/app2}]\n",
    )
    (doc,) = kustomize.build(tmp_path / "o")
    (c,) = doc["spec"]["template"]["spec"]["containers"]
    assert c == {"name": "app", "image": "org/app2:1.0", "args": ["new", "x"]}


def test_unsupported_key_is_refused(tmp_path: Path) -> None:
    _write(tmp_path / "kustomization.yaml", "resources: []\nnamePrefix: x-\n")
    with pytest.raises(ConfigError, match="unsupported key.*namePrefix"):
        kustomize.build(tmp_path)


def test_patch_without_target_is_refused(tmp_path: Path) -> None:
    _write(tmp_path / "d.yaml", DEPLOY)
    _write(tmp_path / "p.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: other}\n")
    _write(tmp_path / "kustomization.yaml", "resources: [d.yaml]\npatches: [{path: p.yaml}]\n")
    with pytest.raises(ConfigError, match="matches no Deployment/other"):
        kustomize.build(tmp_path)


def test_missing_resource_is_refused(tmp_path: Path) -> None:
    _write(tmp_path / "kustomization.yaml", "resources: [gone.yaml]\n")
    with pytest.raises(ConfigError, match="gone.yaml does not exist"):
        kustomize.build(tmp_path)
