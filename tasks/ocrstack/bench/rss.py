"""Peak-RSS rows: a child process per page count (pages must be streamed, not held)."""

from __future__ import annotations

import json
import resource
import sys
from collections.abc import Sequence
from pathlib import Path

from ocrstack.bench.harness import Fleet, make_pdf, parse_options, run_pipeline
from ocrstack.bench.options import BenchOptions
from ocrstack.bench.results import RSS_TARGET, Row
from ocrstack.core import proc


def rss_rows(opts: BenchOptions, work: Path) -> list[Row]:
    """Peak RSS per page count; the first count is the base, the last is compared with it (target),
    counts in between are shown for the shape of the curve (bounded vs growing with pages)."""
    counts = list(opts.rss_pages)
    res = {}
    with Fleet(1, 0.0, work, max_concurrent=None) as fleet:
        for n in counts:
            pdf = make_pdf(work / f"doc-{n}.pdf", n)
            argv = [
                sys.executable,
                "-m",
                "ocrstack.bench",
                "--rss-child",
                str(pdf),
                str(work / f"out-rss-{n}"),
                fleet.urls[0],
                str(opts.dpi),
                str(opts.concurrency),
            ]
            cp = proc.run(argv, capture=True, echo=False, timeout=1800)
            res[n] = json.loads(cp.stdout.strip().splitlines()[-1])
    base, last = counts[0], counts[-1]
    rows = []
    for n in counts:
        ratio = res[n]["maxrss_kib"] / res[base]["maxrss_kib"]
        target = n == last
        rows.append(
            Row(
                f"peak RSS {n} pages",
                round(res[n]["maxrss_kib"] / 1024, 1),
                "MiB",
                f"<= {RSS_TARGET} x {base}-page" if target else "",
                ("meets" if ratio <= RSS_TARGET else "misses") if target else "info",
                f"{ratio:.3f} x the {base}-page run; {res[n]['seconds']:.1f} s; child VmHWM, "
                f"zero-latency endpoint, --concurrency {opts.concurrency}",
            )
        )
    return rows


def peak_rss_kib() -> int:
    """Peak resident set size of this process in KiB.

    Linux: ``VmHWM`` from ``/proc/self/status``. ``ru_maxrss`` is not used there because
    it survives ``exec``: a child forked from a large parent (this benchmark after the
    8-endpoint run) reports the parent's size. Elsewhere: ``ru_maxrss`` (KiB on Linux/BSD).
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def rss_child(argv: Sequence[str]) -> int:
    """Child of the RSS rows: parse one PDF, print ``{"maxrss_kib", "seconds"}`` (:func:`peak_rss_kib`)."""
    pdf, out, url, dpi, conc = argv
    t, _ = run_pipeline(parse_options(Path(pdf), Path(out), [url], int(conc), int(dpi)))
    print(json.dumps({"maxrss_kib": peak_rss_kib(), "seconds": t}))
    return 0
