"""``ocrstack api serve|load|replicas|security``: parse as an HTTP service (issues 12, 23, 25); argument
parsing only.

``api serve`` flags are derived from two declarations: the service's own settings
(:class:`ocrstack.api.config.ServiceConfig`) and the parse options marked ``SERVICE`` in
:mod:`ocrstack.parsing.options` (the defaults of every job), plus ``--ray`` / ``--ray-address``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ocrstack.commands import add_json
from ocrstack.core import options as opt


@dataclass(frozen=True)
class Load:
    """The sizes of ``ocrstack api load`` (its run: :class:`ocrstack.api.loadtest.LoadOptions`)."""

    jobs: int = opt.option(
        50,
        flags=("--jobs",),
        convert=int,
        minimum=1,
        example="50",
        help="concurrent submissions (default: {default})",
    )
    rss_jobs: str = opt.option(
        "20,200",
        flags=("--rss-jobs",),
        example="20,200",
        help="job counts for the RSS ratio (default: {default})",
    )
    workdir: Path | None = opt.option(
        None, flags=("--workdir",), convert=opt.path, help="keep data, logs and inputs here"
    )


def _counts(value: str) -> tuple[int, ...]:
    """Converter for ``--replicas``: ``1,2,3`` -> ``(1, 2, 3)`` (each >= 1)."""
    counts = tuple(int(x) for x in value.split(","))
    if not counts or min(counts) < 1:
        raise ValueError(value)
    return counts


@dataclass(frozen=True)
class Replicas:
    """The sizes of ``ocrstack api replicas`` (its run:
    :class:`ocrstack.api.replicaload.ReplicaLoadOptions`)."""

    replicas: tuple[int, ...] = opt.option(
        (1, 2, 3),
        flags=("--replicas",),
        convert=_counts,
        example="1,2,3",
        show=lambda v: ",".join(map(str, v)),
        help="replica counts, one table row each (default: {default})",
    )
    jobs: int = opt.option(
        50, flags=("--jobs",), convert=int, minimum=1, example="50", help="jobs per row (default: {default})"
    )
    pages: int = opt.option(
        3, flags=("--pages",), convert=int, minimum=1, example="3", help="pages per job (default: {default})"
    )
    workdir: Path | None = opt.option(
        None, flags=("--workdir",), convert=opt.path, help="keep data, logs and inputs here"
    )


@dataclass(frozen=True)
class Security:
    """Where ``ocrstack api security`` keeps its files (:func:`ocrstack.api.security.run`)."""

    workdir: Path | None = opt.option(
        None, flags=("--workdir",), convert=opt.path, help="keep data, logs and inputs here"
    )


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``api`` verb with ``serve``, ``load``, ``replicas`` and ``security``."""
    from ocrstack.api.config import ServiceConfig
    from ocrstack.core import options as opt
    from ocrstack.parsing.options import ParseOptions
    from ocrstack.scaleout import options as ray_options

    p = sub.add_parser("api", help="parse as an HTTP service: jobs, metrics, web page (issue 12)")
    verbs = p.add_subparsers(dest="api_command", metavar="SUBCOMMAND", required=True)
    s = verbs.add_parser(
        "serve",
        help="start the service (FastAPI + uvicorn) on 127.0.0.1",
        description="Durable jobs in --data-dir (SQLite + files); a restart finishes every accepted job. "
        "Web page at /, OpenAPI at /docs, Prometheus at /metrics. The parse options below are the "
        "defaults of every job; a request may override those the API documents as form fields, and "
        "may pick recognizer servers only among --server-url.",
    )
    opt.add_arguments(s, ServiceConfig)
    opt.add_arguments(s, ParseOptions, opt.SERVICE)
    ray_options.add_arguments(s)  # --ray / --ray-address: every job's pages run on Ray
    s.set_defaults(handler=_serve)

    ld = verbs.add_parser(
        "load",
        help="bounded load/fault run against a local service (loopback only; prints a table)",
        description="50 concurrent jobs, status latency while parsing, SIGKILL + restart, "
        "RSS after 20 vs 200 jobs.",
    )
    opt.add_arguments(ld, Load)
    add_json(ld, what="the result")
    ld.set_defaults(handler=_load)

    rp = verbs.add_parser(
        "replicas",
        help="fault table of 1/2/3 replicas on a private PostgreSQL (loopback only; prints a table)",
        description="Per row: N replicas on one database, 50 jobs, SIGKILL of a job-holding replica, "
        "a database restart; jobs completed, pages lost, finished pages recomputed, duplicate "
        "results, status p99. Needs the PostgreSQL server binaries (initdb, pg_ctl). Exit 1 when "
        "an invariant breaks.",
    )
    opt.add_arguments(rp, Replicas, prefix="replicas_")
    add_json(rp, what="the table")
    rp.set_defaults(handler=_replicas)

    sec = verbs.add_parser(
        "security",
        help="the issue-25 attack table against the CLI and a local service (loopback only)",
        description="Hostile inputs, clients and recognizers tried on 127.0.0.1; prints case, expected, "
        "observed and held/FAILED; exit 1 when any case failed.",
    )
    opt.add_arguments(sec, Security)
    add_json(sec, what="the table")
    sec.set_defaults(handler=_security)


def _serve(args: argparse.Namespace) -> int:
    from ocrstack.api.config import ServiceConfig, require_api_extra

    require_api_extra()  # before anything imports FastAPI: a fix instead of a traceback
    from ocrstack.api.options import service_defaults
    from ocrstack.api.server import serve
    from ocrstack.core import options as opt
    from ocrstack.parsing.options import ParseOptions
    from ocrstack.scaleout import options as ray_options

    base = service_defaults(opt.namespace_values(args, ParseOptions, opt.SERVICE))
    ray = ray_options.from_args(args)
    config = opt.build(
        ServiceConfig,
        opt.namespace_values(args, ServiceConfig),
        base=base,
        ray=ray.address,
        ray_pool_ttl=ray.ray_pool_ttl,
    )
    serve(config)
    return 0


def _load(args: argparse.Namespace) -> int:
    from ocrstack.api.config import require_api_extra

    require_api_extra()
    from ocrstack.api import loadtest
    from ocrstack.core.errors import UsageError

    load = opt.build(Load, opt.namespace_values(args, Load))
    try:
        small, big = (int(x) for x in load.rss_jobs.split(","))
    except ValueError:
        raise UsageError(
            f"--rss-jobs {load.rss_jobs!r}: expected two numbers", "use e.g. --rss-jobs 20,200"
        ) from None
    result = loadtest.run(
        loadtest.LoadOptions(jobs=load.jobs, rss_small=small, rss_big=big, workdir=load.workdir)
    )
    print(result.to_json() if args.json else result.table())
    return 0 if result.ok else 1


def _replicas(args: argparse.Namespace) -> int:
    from ocrstack.api.config import require_api_extra

    require_api_extra()
    from ocrstack.api import replicaload

    sizes = opt.build(Replicas, opt.namespace_values(args, Replicas, prefix="replicas_"))
    table = replicaload.run(
        replicaload.ReplicaLoadOptions(
            replicas=sizes.replicas, jobs=sizes.jobs, pages=sizes.pages, workdir=sizes.workdir
        )
    )
    print(table.to_json() if args.json else table.table())
    return 0 if table.ok else 1


def _security(args: argparse.Namespace) -> int:
    from ocrstack.api.config import require_api_extra

    require_api_extra()
    from ocrstack.api import security

    table = security.run(opt.build(Security, opt.namespace_values(args, Security)).workdir)
    print(table.to_json() if args.json else table.text())
    return 0 if table.ok else 1
