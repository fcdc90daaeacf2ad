"""The ``--ray`` option of ``ocrstack parse`` (and ``ocrstack api serve``), declared once.

``--ray`` alone = a local Ray started for the run on 127.0.0.1 (``local``); ``--ray auto`` = the
cluster this machine belongs to (Ray's own ``auto``: ``RAY_ADDRESS`` or a ``ray start`` node,
what a KubeRay RayJob gives its entrypoint); ``--ray HOST:PORT`` / ``--ray ray://HOST:10001`` =
a cluster's GCS or Ray Client address (passed to :func:`ray.init` as it is).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError

#: ``--ray`` given without an address.
LOCAL = "local"


def ray_address(value: str) -> str:
    """Converter for ``--ray``: ``local``, ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``.

    Raises:
        UsageError: anything else, e.g. an input file taken as the address by ``--ray in.pdf``
            (the fix says to write ``--ray=ADDRESS`` or to put ``--ray`` after the inputs).
    """
    v = value.strip()
    host, sep, port = v.rpartition(":")
    if v in (LOCAL, "auto") or v.startswith("ray://") or (sep and host and port.isdigit()):
        return v
    raise UsageError(
        f"--ray: {value!r} is not a Ray address (local, auto, HOST:PORT or ray://HOST:PORT)",
        "put --ray after the inputs for a local Ray (ocrstack parse IN -o OUT --ray), "
        "or give the address as --ray=ADDRESS",
    )


@dataclass(frozen=True, kw_only=True)
class RayOptions:
    """Where pages are computed: None = this process (the local pipeline)."""

    ray: str | None = opt.option(
        None,
        flags=("--ray",),
        metavar="ADDRESS",
        const=LOCAL,
        convert=ray_address,
        example="auto",
        help="compute pages on Ray: no ADDRESS = a local Ray on 127.0.0.1, 'auto' = this node's "
        "cluster, or HOST:PORT / ray://HOST:PORT (put --ray after the inputs or write --ray=ADDRESS)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--ray`` to ``parser``."""
    opt.add_arguments(parser, RayOptions)


def from_args(args: argparse.Namespace) -> RayOptions:
    """RayOptions from parsed arguments.

    Raises:
        UsageError: an address that is none of the accepted forms.
    """
    return opt.build(RayOptions, opt.namespace_values(args, RayOptions))
