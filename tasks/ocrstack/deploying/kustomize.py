"""Build a kustomize overlay in Python: the subset of kustomize that ``deploy/k8s`` uses.

No ``kustomize`` binary is installable here (not on PyPI as the Go tool, not in Debian
bookworm), so ``ocrstack deploy k8s`` renders overlays itself. Supported kustomization keys:
``resources`` (files or directories holding a kustomization.yaml), ``patches`` (``path:``
strategic-merge patches, target taken from the patch's kind and name) and ``images``
(``name`` -> ``newName``/``newTag``). Any other key is refused rather than ignored, so the
result holds the objects ``kubectl kustomize`` would produce for these files (kustomize may
order them differently; this keeps resource order).

Strategic merge follows the Kubernetes rules for the fields patched here: mappings merge
recursively; lists of mappings that all carry ``name`` (containers, env, volumes,
volumeMounts) merge by ``name`` (Kubernetes merges ``ports`` by ``containerPort``: do not patch
ports through this renderer); every other list (``args``, ``command``) is replaced.
(Reference: https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/)
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from ocrstack.core import paths
from ocrstack.core.errors import ConfigError

KUSTOMIZATION = "kustomization.yaml"
SUPPORTED = {"apiVersion", "kind", "resources", "patches", "images"}
Manifest = dict[str, Any]


def _load_docs(path: Path) -> list[Manifest]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"{path}: cannot read manifest ({' '.join(str(exc).split())})", "fix the YAML"
        ) from exc
    for d in docs:
        if not isinstance(d, dict) or "kind" not in d or "metadata" not in d:
            raise ConfigError(
                f"{path}: a document is not a Kubernetes object", "each needs kind and metadata"
            )
    return docs


def strategic_merge(base: Any, patch: Any) -> Any:
    """Return ``base`` with ``patch`` merged in (inputs untouched); rules in the module docstring."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = strategic_merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    named = lambda items: all(isinstance(i, dict) and "name" in i for i in items)  # noqa: E731
    if isinstance(base, list) and isinstance(patch, list) and base and named(base) and named(patch):
        out_list = [copy.deepcopy(i) for i in base]
        index = {item["name"]: n for n, item in enumerate(out_list)}
        for item in patch:
            if item["name"] in index:
                out_list[index[item["name"]]] = strategic_merge(out_list[index[item["name"]]], item)
            else:
                out_list.append(copy.deepcopy(item))
        return out_list
    return copy.deepcopy(patch)


def _key(doc: Manifest) -> tuple[str, str]:
    return doc["kind"], doc["metadata"].get("name", "")


def _set_images(node: Any, images: list[dict[str, str]]) -> None:
    if isinstance(node, dict):
        for field in ("containers", "initContainers"):
            for c in node.get(field) or []:
                if isinstance(c, dict) and "image" in c:
                    c["image"] = _new_image(c["image"], images)
        for value in node.values():
            _set_images(value, images)
    elif isinstance(node, list):
        for value in node:
            _set_images(value, images)


def _new_image(image: str, images: list[dict[str, str]]) -> str:
    name, sep, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
    for rule in images:
        if rule.get("name") == name:
            new_name, new_tag = rule.get("newName", name), rule.get("newTag", tag)
            return f"{new_name}:{new_tag}" if new_tag else new_name
    return image


def build(directory: Path) -> list[Manifest]:
    """Render the kustomization in ``directory``; return its objects in resource order.

    Raises:
        ConfigError: missing kustomization.yaml, an unsupported key, a resource that does not
            exist, or a patch whose kind/name matches no resource (kustomize refuses that too).
    """
    kfile = directory / KUSTOMIZATION
    spec: Any = paths.read_yaml(kfile, "kustomization")
    if not isinstance(spec, dict):
        raise ConfigError(f"{kfile}: not a mapping", "restore it from git")
    unknown = set(spec) - SUPPORTED
    if unknown:
        raise ConfigError(
            f"{kfile}: unsupported key(s) {', '.join(sorted(unknown))}",
            f"ocrstack's renderer supports {', '.join(sorted(SUPPORTED))}; use kubectl kustomize for more",
        )
    docs: list[Manifest] = []
    for res in spec.get("resources") or []:
        path = (directory / res).resolve()
        if path.is_dir():
            docs.extend(build(path))
        elif path.is_file():
            docs.extend(_load_docs(path))
        else:
            raise ConfigError(f"{kfile}: resource {res} does not exist", "fix the path in resources:")
    for entry in spec.get("patches") or []:
        if not isinstance(entry, dict) or set(entry) != {"path"}:
            raise ConfigError(
                f"{kfile}: patches entries must be {{path: FILE}}", "inline/targeted patches unsupported"
            )
        for patch in _load_docs(directory / entry["path"]):
            hits = [n for n, d in enumerate(docs) if _key(d) == _key(patch)]
            if not hits:
                raise ConfigError(
                    f"{kfile}: patch {entry['path']} matches no {'/'.join(_key(patch))}", "fix its kind/name"
                )
            docs[hits[0]] = strategic_merge(docs[hits[0]], patch)
    if spec.get("images"):
        docs = copy.deepcopy(docs)
        _set_images(docs, list(spec["images"]))
    return docs


def dump(docs: list[Manifest]) -> str:
    """Multi-document YAML (``---`` separated) as ``kubectl kustomize`` prints it."""
    return "---\n".join(yaml.safe_dump(d, sort_keys=False, width=10_000) for d in docs)
