"""The ``--ray`` and ``--ray-address`` options of ``ocrstack parse`` and ``ocrstack api serve``,
declared once (issue 23: an option that takes an address is unambiguous).

``--ray`` is a flag: a local Ray started for the run on 127.0.0.1. ``--ray-address ADDRESS`` joins a
running cluster: ``auto`` (Ray's own: ``RAY_ADDRESS`` or a ``ray start`` node, what a KubeRay RayJob
gives its entrypoint), ``HOST:PORT`` (a GCS address) or ``ray://HOST:10001`` (Ray Client), passed to
:func:`ray.init` as it is. Before issue 23 ``--ray`` took an optional address, so ``parse --ray
in.pdf`` read the input as the address; now ``--ray`` takes nothing, and the old spelling
``--ray ADDRESS INPUT`` (an "input" that does not exist and reads as a Ray address) is refused with
the fix (:func:`check_inputs`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError

#: The address of a local Ray started for the run (``--ray``).
LOCAL = "local"
FLAGS = "Ray"
#: Seconds a kept page actor waits for a call before it ends itself (``--ray-pool-ttl``'s
#: default; :mod:`ocrstack.scaleout.pool`): long enough for the next run of a batch, short enough
#: that an idle cluster gets its CPUs back within minutes.
DEFAULT_TTL = 300.0


def looks_like_address(value: str) -> bool:
    """True for ``auto``, ``ray://...`` and ``HOST:PORT`` (a numeric port), the forms Ray accepts."""
    v = value.strip()
    host, sep, port = v.rpartition(":")
    return v == "auto" or v.startswith("ray://") or bool(sep and host and port.isdigit())


def ray_address(value: str) -> str:
    """Converter for ``--ray-address``: ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``.

    Raises:
        UsageError: anything else (e.g. a file name), with the accepted forms.
    """
    v = value.strip()
    if looks_like_address(v):
        return v
    raise UsageError(
        f"--ray-address: {value!r} is not a Ray address (auto, HOST:PORT or ray://HOST:PORT)",
        "give a running cluster's address, e.g. --ray-address 127.0.0.1:6379, or use --ray alone "
        "for a local Ray",
    )


@dataclass(frozen=True, kw_only=True)
class RayOptions:
    """Where pages are computed: neither flag = this process (the local pipeline)."""

    ray: bool = opt.option(
        False,
        flags=("--ray",),
        group=FLAGS,
        exclusive="ray",
        help="compute pages on a local Ray started for the run on 127.0.0.1 (takes no value; "
        "a running cluster: --ray-address)",
    )
    ray_address: str | None = opt.option(
        None,
        flags=("--ray-address",),
        metavar="ADDRESS",
        convert=ray_address,
        example="127.0.0.1:6379",
        group=FLAGS,
        exclusive="ray",
        help="compute pages on a running Ray cluster: 'auto' (this node's cluster, $RAY_ADDRESS), "
        "HOST:PORT (its GCS) or ray://HOST:10001",
    )
    ray_pool_ttl: float = opt.option(
        DEFAULT_TTL,
        flags=("--ray-pool-ttl",),
        metavar="SECONDS",
        convert=float,
        minimum=0,
        example="300",
        group=FLAGS,
        help="with --ray-address: the page actors stay on the cluster for the next run with the same "
        "engine settings and end after SECONDS without a page; 0: end them with this run "
        "(default: {default:g})",
    )

    @property
    def address(self) -> str | None:
        """What :class:`ocrstack.scaleout.RayExecutor` takes: :data:`LOCAL` for ``--ray``, the
        ``--ray-address`` value, or None (no Ray)."""
        return LOCAL if self.ray else self.ray_address


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--ray`` and ``--ray-address`` (one of them) to ``parser``."""
    opt.add_arguments(parser, RayOptions)


def from_args(args: argparse.Namespace) -> RayOptions:
    """RayOptions from parsed arguments.

    Raises:
        UsageError: an address that is none of the accepted forms.
    """
    return opt.build(RayOptions, opt.namespace_values(args, RayOptions))


def check_inputs(options: RayOptions, inputs: Iterable[Path]) -> None:
    """Refuse the pre-issue-23 spelling ``--ray ADDRESS INPUT``: with ``--ray`` given, an input that
    does not exist and reads as a Ray address was meant as the address.

    Raises:
        UsageError: one line naming the fix (``--ray-address ADDRESS``).
    """
    if not options.ray:
        return
    for p in inputs:
        text = str(p).replace("ray:/", "ray://", 1) if str(p).startswith("ray:/") else str(p)
        if not p.exists() and looks_like_address(text):  # (a Path folds ray:// to ray:/)
            raise UsageError(
                f"--ray takes no address: {text!r} was read as an input",
                f"join a running cluster with --ray-address {text}, or drop it for a local Ray",
            )
