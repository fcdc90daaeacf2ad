"""Options of ``ocrstack deploy`` and its ``k8s`` and ``check`` actions, each declared once
(:mod:`ocrstack.core.options`).

This module imports no dev-only package, so ``ocrstack.commands.deploy`` derives its flags from
it when the parser is built, while the checks themselves stay imported on use.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ocrstack.core import options as opt


@dataclass(frozen=True)
class DeployOptions:
    """Options of ``ocrstack deploy`` itself: ``deploy_dir`` None is the checkout's ``deploy/``
    (:func:`ocrstack.deploying.servers.deploy_dir`)."""

    deploy_dir: Path | None = opt.option(
        None, flags=("--deploy-dir",), convert=Path, help="deploy folder (default: the checkout's)"
    )


@dataclass(frozen=True)
class K8sOptions:
    """Options of ``ocrstack deploy k8s``: ``overlays`` to render (empty: all of them), each
    written to ``output/<overlay>.yaml`` (None: stdout)."""

    overlays: tuple[str, ...] = opt.option(
        (), flags=("--overlay",), many=True, help="dspark, standard, upstream (default: all)"
    )
    output: Path | None = opt.option(
        None, flags=("-o", "--output"), convert=Path, help="write DIR/<overlay>.yaml (default: stdout)"
    )


@dataclass(frozen=True)
class CheckOptions:
    """Options of ``ocrstack deploy check``: ``k8s_version`` None is
    :data:`ocrstack.deploying.validate.K8S_VERSION`."""

    k8s_version: str | None = opt.option(
        None, flags=("--k8s-version",), help="Kubernetes schema version (default: deploying.validate's)"
    )
