"""Scripted fault run and routing split (issue 10 "Done when", issue 13 item 2).

Each fault scenario runs the real CLI (``python -m ocrstack parse`` in a child process) with
``--recognizer openai --layout none`` on a generated multi-frame TIFF (one distinct image per
page: no text layer, one request per page) against :mod:`ocrstack.testing.fake_openai`
servers on 127.0.0.1, and reports one row: ``scenario | requests | retries | pages lost | exit code``.

* ``requests``: chat requests the servers received (probes and re-checks included);
* ``retries``: requests the client sent again after a fault (its ``server faults:`` line on
  stderr; refused connections included, which no server records);
* ``pages lost``: pages of the input whose block has no text in ``NAME.blocks.json`` (or is
  marked failed) after the scenario ended -- for ``poison block`` after the rerun;
* ``exit code``: of the parse (``7 -> 0``: first run, then the rerun).

Scenarios here: ``5xx burst`` (a 2 s 503 burst at ``--concurrency 4``), ``poison block`` (one page
always answers 500; exit 7, then the server is cured and the same command reruns only that block),
``server restart`` (the only server stops mid-run and comes back 2 s later on the same port).
:data:`SCENARIOS` maps names to functions ``(work_dir) -> FaultRow``; :func:`scenarios` adds those
of :mod:`ocrstack.bench.interrupts` (Ctrl-C mid-page, SIGKILL mid-batch then rerun). The row and
the shared helpers are in :mod:`ocrstack.bench.faultkit`.

:func:`routing_split` measures load-aware routing: two servers with vLLM-format ``/metrics``, one
reporting ``extra_waiting`` queued requests of another client; the share of blocks each received.

Run: ``python -m ocrstack.bench.faults`` prints both tables; :func:`fault_rows` and
:func:`routing_rows` are ``ocrstack bench`` sections (``(opts, work) -> list[Row]``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ocrstack.bench import interrupts
from ocrstack.bench.faultkit import (
    FaultRow,
    block_requests,
    format_table,
    make_tiff,
    pages_lost,
    resent,
    run_cli,
)
from ocrstack.bench.results import Row
from ocrstack.testing.fake_openai import FakeOpenAIServer

#: Fake generation time per request (s).
LATENCY = 0.05


def burst(work: Path, pages: int = 16) -> FaultRow:
    """A 2 s burst of 503 starting at the 4th request, ``--concurrency 4``."""
    doc = make_tiff(work / "burst.tiff", pages)
    start = time.monotonic()
    with FakeOpenAIServer(latency=0.3, burst_after=4, burst_seconds=2.0) as srv:  # 4 in flight fail together
        code, err = run_cli([doc], work / "out-burst", [srv.url], "--concurrency", "4")
        total = srv.chat_count
    lost = pages_lost(work / "out-burst" / "burst.blocks.json", pages)
    row = FaultRow("5xx burst (2 s, concurrency 4)", total, resent(err), lost, str(code))
    row.seconds = time.monotonic() - start
    return row


def poison(work: Path, pages: int = 8) -> FaultRow:
    """One page's image always answers 500; then the server is cured and the command reruns."""
    doc = make_tiff(work / "poison.tiff", pages)
    out = work / "out-poison"
    start = time.monotonic()
    with FakeOpenAIServer(latency=LATENCY, poison_nth=2) as srv:
        first, err = run_cli([doc], out, [srv.url])
        srv.cure()
        second, err2 = run_cli([doc], out, [srv.url])
        total = srv.chat_count
    lost = pages_lost(out / "poison.blocks.json", pages)
    row = FaultRow("poison block (+ rerun)", total, resent(err + err2), lost, f"{first} -> {second}")
    row.seconds = time.monotonic() - start
    return row


def restart(work: Path, pages: int = 16, down: float = 4.0) -> FaultRow:
    """The only server dies (:meth:`FakeOpenAIServer.kill`: requests in flight get no answer) after
    a quarter of the pages and is back on the same port ``down`` s later."""
    doc = make_tiff(work / "restart.tiff", pages)
    start = time.monotonic()
    first = FakeOpenAIServer(latency=0.1).start()
    port, servers = first.port, [first]
    result: list[tuple[int, str]] = []
    runner = threading.Thread(
        target=lambda: result.append(run_cli([doc], work / "out-restart", [first.url], "--concurrency", "2"))
    )
    runner.start()
    deadline = time.monotonic() + 60
    while len(block_requests([first])) < pages // 4 and runner.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    first.kill()
    time.sleep(down)
    servers.append(FakeOpenAIServer(port, latency=0.1).start())
    runner.join(timeout=120)
    servers[-1].stop()
    total = sum(s.chat_count for s in servers)
    lost = pages_lost(work / "out-restart" / "restart.blocks.json", pages)
    code, err = result[0] if result else ("hung", "")
    row = FaultRow(f"server killed + restarted ({down:g} s down)", total, resent(err), lost, str(code))
    row.seconds = time.monotonic() - start
    return row


#: Scenario name -> function(work_dir) -> FaultRow, in table order.
SCENARIOS: dict[str, Callable[[Path], FaultRow]] = {"burst": burst, "poison": poison, "restart": restart}


#: Exit codes of a scenario that ends well (``first -> rerun`` where the command runs twice).
GOOD_EXIT = ("0", "7 -> 0", "130 -> 0", "-9 -> 0")
#: Seconds from SIGINT to exit of an interrupted run (issue 10's target; the Ctrl-C row's ``stop_seconds``).
STOP_TARGET = 2.0


def scenarios() -> dict[str, Callable[[Path], FaultRow]]:
    """:data:`SCENARIOS` plus the interrupted runs (Ctrl-C mid-page, SIGKILL mid-batch then rerun)
    of :mod:`ocrstack.bench.interrupts`, in table order."""
    return {**SCENARIOS, **interrupts.SCENARIOS}


def fault_table(work: Path, names: list[str] | None = None) -> list[FaultRow]:
    """Run the scenarios (all of :func:`scenarios`, or ``names``) in ``work``; one row each."""
    table = scenarios()
    return [table[n](work) for n in names or list(table)]


def routing_split(
    blocks: int = 80, extra_waiting: int = 20, concurrency: int = 4, routing_mode: str = "auto"
) -> dict[str, Any]:
    """Send ``blocks`` requests through one :class:`~ocrstack.client.Dispatcher` to two fake
    servers with vLLM ``/metrics``; server B reports ``extra_waiting`` queued requests of another
    client and answers ``1 + extra_waiting / concurrency`` times slower (the wait behind them).
    Returns ``{"idle": n, "loaded": n, "loaded_share": f, "seconds": s, "modes": {...}}``."""
    from ocrstack.client import Dispatcher, chat_body, tiny_png

    with (
        FakeOpenAIServer(latency=LATENCY, metrics="vllm") as idle,
        FakeOpenAIServer(  # its queue makes each of our requests wait behind the other client's
            latency=LATENCY * (1 + extra_waiting / concurrency), metrics="vllm", extra_waiting=extra_waiting
        ) as loaded,
        Dispatcher(
            [idle.url, loaded.url],
            model="minicpm-ocr",
            concurrency=concurrency,
            routing_mode=routing_mode,
            metrics_interval=0.2,
        ) as d,
    ):
        deadline = time.monotonic() + 5
        while routing_mode == "auto" and time.monotonic() < deadline:
            if all(d.load_mode(u) == "metrics" for u in (idle.url, loaded.url)):
                break
            time.sleep(0.05)
        modes = {"idle": d.load_mode(idle.url), "loaded": d.load_mode(loaded.url)}
        start = time.monotonic()
        body = chat_body("minicpm-ocr", "OCR", tiny_png(), max_tokens=16)
        futures = [d.submit(body) for _ in range(blocks)]
        for f in futures:
            f.result(timeout=60)
        seconds = time.monotonic() - start
        a, b = len(idle.requests), len(loaded.requests)
    return {"idle": a, "loaded": b, "loaded_share": b / max(1, a + b), "seconds": seconds, "modes": modes}


def fault_rows(opts: Any, work: Path) -> list[Row]:
    """Bench section (``ocrstack bench``): one row per scenario, ``value`` = pages lost (target 0),
    the other columns in ``detail``; the Ctrl-C row also meets only when the run stopped within
    :data:`STOP_TARGET` s of SIGINT. ``opts`` (:class:`~ocrstack.bench.options.BenchOptions`) is
    unused: the scenarios have fixed sizes (about 20 s in all)."""
    rows = []
    for r in fault_table(work):
        ok = r.pages_lost == 0 and r.exit_code in GOOD_EXIT
        detail = f"requests {r.requests}, retries {r.retries}, exit code {r.exit_code}, {r.seconds:.1f} s"
        stop = getattr(r, "stop_seconds", None)
        if stop is not None:
            ok = ok and stop <= STOP_TARGET
            detail += f", stopped {stop:.1f} s after SIGINT (target {STOP_TARGET:g} s)"
        rows.append(
            Row(f"faults: {r.scenario}", r.pages_lost, "pages lost", "0", "meets" if ok else "misses", detail)
        )
    return rows


def routing_rows(opts: Any, work: Path) -> list[Row]:
    """Bench section: share of blocks the loaded server received with ``--routing auto`` and with
    in-flight counting only (:func:`routing_split`, 80 blocks, 20 requests queued on it)."""
    rows = []
    for mode in ("auto", "inflight"):
        split = routing_split(routing_mode=mode)
        detail = f"idle {split['idle']} / loaded {split['loaded']} blocks, {split['seconds']:.2f} s"
        rows.append(
            Row(f"routing {mode}: loaded server's share", split["loaded_share"], "of blocks", detail=detail)
        )
    return rows


def main() -> int:
    """Print the fault table and the routing split (a temporary work directory)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ocrstack-faults-") as tmp:
        print(format_table(fault_table(Path(tmp))))
    for mode in ("auto", "inflight"):
        split = routing_split(routing_mode=mode)
        print(
            f"routing {mode}: idle server {split['idle']} blocks, loaded server (20 queued) "
            f"{split['loaded']} blocks ({split['loaded_share']:.0%}), {split['seconds']:.2f} s, "
            f"modes {split['modes']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
