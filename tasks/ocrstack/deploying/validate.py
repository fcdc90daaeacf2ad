"""Offline schema validation of Kubernetes objects and the compose file.

* Core objects: ``kubernetes-validate`` (PyPI) with its bundled OpenAPI schemas for
  :data:`K8S_VERSION`, strict mode (unknown fields are errors).
* Custom resources: the ``openAPIV3Schema`` of the KubeRay and prometheus-operator CRDs, vendored
  under ``deploy/schemas/`` (source repository, path and commit in ``deploy/schemas/README.md``).
  The API server prunes unknown fields of a structural schema silently; here they are errors
  instead (``additionalProperties: false`` is added wherever a schema lists ``properties`` and
  does not preserve unknown fields), so a misspelt field cannot disappear unnoticed.
* compose.yaml: the compose-spec JSON schema (vendored the same way), Draft 7.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate

# Kubernetes minor the manifests target (kubernetes-validate bundles schemas per version).
K8S_VERSION = "1.31.0"
# (apiVersion, kind) -> vendored openAPIV3Schema file in deploy/schemas/
CRD_SCHEMAS = {
    ("ray.io/v1", "RayJob"): "ray.io_v1_rayjob.json",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com_v1_servicemonitor.json",
    ("monitoring.coreos.com/v1", "PodMonitor"): "monitoring.coreos.com_v1_podmonitor.json",
}
COMPOSE_SCHEMA = "compose-spec.json"
# resource.Quantity syntax: the pattern the CRD schemas carry (controller-gen, from
# k8s.io/apimachinery/pkg/api/resource); kubernetes-validate's core schemas accept any string.
QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def quantity_errors(node: Any, path: tuple[str, ...] = ()) -> list[str]:
    """``path: message`` for each ``resources.limits/requests`` value that is not a Quantity."""
    out: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            here = (*path, str(key))
            if key in ("limits", "requests") and path[-1:] == ("resources",) and isinstance(value, dict):
                out += [
                    f"{'.'.join((*here, name))}: {q!r} is not a quantity"
                    for name, q in value.items()
                    if not QUANTITY.match(str(q))
                ]
            else:
                out += quantity_errors(value, here)
    elif isinstance(node, list):
        for n, value in enumerate(node):
            out += quantity_errors(value, (*path, str(n)))
    return out


def _closed(schema: Any) -> Any:
    """Copy of ``schema`` with ``additionalProperties: false`` wherever properties are listed."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: _closed(v) if k != "properties" else {p: _closed(s) for p, s in v.items()}
        for k, v in schema.items()
    }
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@lru_cache(maxsize=8)
def _crd_validator(path: str) -> jsonschema.protocols.Validator:
    schema = _closed(json.loads(Path(path).read_text(encoding="utf-8")))
    # metadata is `type: object` in a CRD schema; the API server checks ObjectMeta itself
    schema = copy.deepcopy(schema)
    schema.setdefault("required", [])
    for key in ("apiVersion", "kind", "metadata", "spec"):
        if key not in schema["required"]:
            schema["required"].append(key)
    return jsonschema.Draft7Validator(schema)


def _where(path: Any) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def validate_object(doc: dict[str, Any], schemas: Path, version: str = K8S_VERSION) -> list[str]:
    """Errors for one object (empty list = valid).

    Args:
        doc: a Kubernetes object (``apiVersion``, ``kind``, ``metadata``, ...).
        schemas: the ``deploy/schemas`` directory with the vendored CRD schemas.
        version: Kubernetes version for kubernetes-validate, e.g. ``"1.31.0"``.
    Returns:
        One line per error: ``Kind/name: field.path: message``.
    """
    kind, name = doc.get("kind", "?"), (doc.get("metadata") or {}).get("name", "?")
    label = f"{kind}/{name}"
    crd = CRD_SCHEMAS.get((doc.get("apiVersion", ""), kind))
    if crd is not None:
        validator = _crd_validator(str(schemas / crd))
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        out = [f"{label}: {_where(e.absolute_path)}: {e.message}" for e in errors]
        if not (doc.get("metadata") or {}).get("name"):
            out.append(f"{label}: metadata.name: required")
        return out
    quantities = [f"{label}: {e}" for e in quantity_errors(doc)]
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{label}: {_where(exc.path)}: {exc.message}", *quantities]
    except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as exc:
        return [f"{label}: no schema for {doc.get('apiVersion')} {kind} in Kubernetes {version} ({exc})"]
    return quantities


def validate_compose(doc: Any, schemas: Path) -> list[str]:
    """Errors of a compose file (parsed YAML) against the vendored compose-spec schema."""
    schema = json.loads((schemas / COMPOSE_SCHEMA).read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    return [f"compose: {_where(e.absolute_path)}: {e.message}" for e in errors]
