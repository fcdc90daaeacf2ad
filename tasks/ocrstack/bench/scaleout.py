"""Ray vs the local dispatcher: pages/s with 1, 2, 4 fake servers, as ratios in one run (issue 13).

For each server count N the same generated scan (``pages_per_endpoint x N`` image-only US-letter
pages, :func:`make_scan`: no text layer, so every page goes to a server) is parsed twice against the same
:class:`~ocrstack.bench.harness.Fleet` of N fake OpenAI servers (fixed latency per request, one
request generating at a time: server-bound, like vLLM ``--max-num-seqs 1``): once by the local
pipeline (its thread pool and dispatcher) and once with ``--ray`` (:class:`ocrstack.scaleout.RayExecutor`
on a local Ray started once for the section, on 127.0.0.1 with this machine's CPUs). Layout
``none``: one request per page, so the servers, not the layout model, set the pace.

Rows: ``ray/local N servers`` = Ray pages/s / local pages/s (the Ray run includes starting its
actors, which a long job amortises), plus Ray's own scaling ``ray N / (N x ray 1)``. No target
is asserted (issue 13 asks for the ratios); a ratio near 1 means Ray adds no cost where one
machine suffices, the scaling ratio near 1 that the Ray path keeps every server busy.
"""

from __future__ import annotations

from pathlib import Path

from ocrstack.bench.harness import Fleet, parse_options, run_pipeline
from ocrstack.bench.options import BenchOptions
from ocrstack.bench.results import Row

#: Server counts of the rows (issue 13: 1, 2, 4); ``--quick`` uses the first two.
SERVERS = (1, 2, 4)


def make_scan(path: Path, pages: int) -> Path:
    """An image-only PDF of ``pages`` US-letter pages (850 x 1100 px at 100 DPI, 30 lines of
    drawn text each; Pillow's PDF writer), written atomically; reused when it exists."""
    from PIL import Image, ImageDraw

    if path.exists():
        return path
    images = []
    for n in range(pages):
        im = Image.new("L", (850, 1100), 255)
        draw = ImageDraw.Draw(im)
        for line in range(30):
            draw.text((80, 80 + 30 * line), f"page {n + 1} line {line + 1}: the quick brown fox", fill=0)
        images.append(im)
    tmp = path.with_suffix(".tmp")
    images[0].save(tmp, format="PDF", save_all=True, append_images=images[1:], resolution=100)
    tmp.replace(path)
    return path


def scaleout_rows(opts: BenchOptions, work: Path) -> list[Row]:
    """Pages/s of the local pipeline and of ``--ray`` for 1, 2, 4 servers, and their ratios.

    Raises:
        ImportError: Ray is not installed (``ocrstack bench`` turns it into a not-run row).
    """
    import ray

    from ocrstack.scaleout import RayExecutor
    from ocrstack.scaleout.session import ray_environment, restore_ray_environment

    counts = SERVERS[:2] if opts.quick_mode else SERVERS
    started = False
    saved = ray_environment()
    if not ray.is_initialized():
        ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False)
        started = True
    rows: list[Row] = []
    ray_single: float | None = None
    try:
        for n in counts:
            pages = opts.pages_per_endpoint * n
            pdf = make_scan(work / f"scan-{pages}.pdf", pages)
            with Fleet(n, opts.latency, work) as fleet:
                t_local, _ = run_pipeline(
                    parse_options(pdf, work / f"out-local-{n}", fleet.urls, opts.concurrency, opts.dpi)
                )
                executor = RayExecutor()
                t_ray, _ = run_pipeline(
                    parse_options(pdf, work / f"out-ray-{n}", fleet.urls, opts.concurrency, opts.dpi),
                    executor,
                )
            local, remote = pages / t_local, pages / t_ray
            ray_single = ray_single or remote / n
            s = "s" if n > 1 else ""
            rows.append(
                Row(
                    f"ray/local {n} server{s}",
                    round(remote / local, 3),
                    "x",
                    "",
                    "info",
                    f"{pages} pages: ray {remote:.2f} pages/s ({executor.start_seconds:.1f} s of "
                    f"{t_ray:.1f} s starting actors), local {local:.2f} pages/s; "
                    f"server-bound ideal {n / opts.latency:.2f} pages/s",
                )
            )
            if n > 1:
                rows.append(
                    Row(
                        f"ray scaling {n} servers",
                        round(remote / (n * ray_single), 3),
                        "x N x ray 1",
                        "",
                        "info",
                        f"ray {remote:.2f} pages/s vs {n} x {ray_single:.2f}",
                    )
                )
    finally:
        if started:
            ray.shutdown()
            restore_ray_environment(saved)  # else the ray-cluster section's driver loses its actors
    return rows


def warm_cluster_rows(opts: BenchOptions, work: Path) -> list[Row]:
    """``--ray-address`` against a cluster already running vs the local pipeline, in one run
    (issue 23 item 3): a one-node ``ray start`` cluster on 127.0.0.1 with this machine's CPUs
    (:class:`ocrstack.testing.ray_cluster.LoopbackCluster`), started before the timed runs; the
    same scan parsed locally, then twice through ``RayExecutor(address)`` (cold: the cluster's
    first job, which makes the page actors; warm: the second, as a user's next ``parse
    --ray-address``, which finds them kept: :mod:`ocrstack.scaleout.pool`). Each Ray run joins the
    cluster as a new driver (``ray.init`` included in its time, as a CLI run pays it). The detail
    says how many actors each run made and found.

    Rows: ``ray warm/local`` (issue 23's target: >= 0.95) and ``ray cold/local``.

    Raises:
        ImportError: Ray is not installed.
    """
    import os

    import ray

    from ocrstack.scaleout import RayExecutor
    from ocrstack.testing.ray_cluster import LoopbackCluster

    n = 2 if opts.quick_mode else 4
    pages = opts.pages_per_endpoint * n
    pdf = make_scan(work / f"scan-{pages}.pdf", pages)
    figures: dict[str, tuple[float, float]] = {}
    with Fleet(n, opts.latency, work) as fleet, LoopbackCluster(head_cpus=os.cpu_count() or 1) as cluster:
        local_opts = parse_options(pdf, work / "out-local-c", fleet.urls, opts.concurrency, opts.dpi)
        t_local, _ = run_pipeline(local_opts)
        for run in ("cold", "warm"):
            executor = RayExecutor(cluster.address)  # joins, runs, leaves (ray.shutdown) like the CLI
            out = work / f"out-cluster-{run}"
            t, _ = run_pipeline(parse_options(pdf, out, fleet.urls, opts.concurrency, opts.dpi), executor)
            assert executor.pool is not None
            figures[run] = (t, executor.start_seconds, executor.pool.created, executor.pool.found)
        assert not ray.is_initialized()
    local = pages / t_local
    ratio = {run: round(pages / f[0] / local, 3) for run, f in figures.items()}
    return [
        Row(
            f"ray {run}/local ({n} servers, --ray-address)",
            ratio[run],
            "x",
            ">= 0.95" if run == "warm" else "",
            ("meets" if ratio[run] >= 0.95 else "misses") if run == "warm" else "info",
            f"{pages} pages: ray {pages / t:.2f} pages/s ({start:.2f} s of {t:.1f} s starting actors: "
            f"{made} made, {found} kept from before), local {local:.2f} pages/s; "
            f"load average {os.getloadavg()[0]:.1f}",
        )
        for run, (t, start, made, found) in figures.items()
    ]
