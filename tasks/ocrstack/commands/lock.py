"""``ocrstack lock export`` and ``ocrstack lock check``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ocrstack.core import options as opt
from ocrstack.core import paths
from ocrstack.core.errors import CheckFailed, ConfigError
from ocrstack.locking import lockfiles


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``lock`` verb with ``export`` and ``check``; ``--conda-dir`` comes from
    :class:`~ocrstack.locking.lockfiles.LockOptions`."""
    p = sub.add_parser("lock", help="export or check the committed lock files")
    lsub = p.add_subparsers(dest="lock_command", metavar="ACTION", required=True)
    exp = lsub.add_parser(
        "export", help="re-export envs/lock/*.txt from uv.lock (and conda specs when pixi exists)"
    )
    opt.add_arguments(exp, lockfiles.LockOptions)
    exp.set_defaults(handler=_export)
    chk = lsub.add_parser("check", help="fail when envs/lock/*.txt no longer match uv.lock")
    chk.set_defaults(handler=_check)


def _root() -> Path:
    root = paths.repo_root()
    if root is None:
        raise ConfigError("not inside an ocrstack checkout", "run from the repository (pixi run lock-export)")
    return root


def _export(args: argparse.Namespace) -> int:
    values = opt.namespace_values(args, lockfiles.LockOptions)
    for path in lockfiles.export(opt.build(lockfiles.LockOptions, values, root=_root())):
        print(f"wrote {path}")
    return 0


def _check(args: argparse.Namespace) -> int:
    bad = lockfiles.stale(lockfiles.LockOptions(root=_root()))
    if bad:
        raise CheckFailed(
            f"envs/lock/{{{','.join(bad)}}}.txt differ from uv.lock", "run `ocrstack lock export` and commit"
        )
    print("envs/lock/*.txt match uv.lock")
    return 0
