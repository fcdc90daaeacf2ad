"""wait-ready logic (ocrstack.client.readiness): tiny-request readiness, fatal log lines (the doctor's
serve rules), silent phases, timeouts, Retry-After."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.backends import profiles
from ocrstack.client.readiness import LogWatcher, wait_ready
from ocrstack.core.errors import ServerRejected, ServerUnreachable
from ocrstack.doctor import diagnose

PSET = profiles.load()


def never_ready(url: str, model: str, timeout: float):
    raise ServerUnreachable("connection refused")


def test_ready_when_probe_succeeds_after_warmup(tmp_path: Path) -> None:
    calls = []

    def probe(url, model, timeout):
        calls.append(model)
        if len(calls) < 3:
            raise ServerUnreachable("503 warming up")
        return "ok"

    out = wait_ready("http://127.0.0.1:1", "minicpm-ocr", timeout=10, probe=probe, interval=0.01, pset=PSET)
    assert out.ready and out.reason == "ready" and out.probe == "ok"
    assert calls == ["minicpm-ocr"] * 3


def test_rejection_ends_the_wait_at_once() -> None:
    calls = []

    def probe(url, model, timeout):
        calls.append(1)
        raise ServerRejected(
            "HTTP 400: Server is pinned to '/m'; requested 'minicpm-ocr'.", "pass --model /m", 400
        )

    out = wait_ready("http://x", "minicpm-ocr", timeout=60, probe=probe, interval=0.01, pset=PSET)
    assert not out.ready and out.reason == "rejected" and len(calls) == 1  # not probed again
    with pytest.raises(ServerRejected, match="pinned") as err:
        out.raise_for_failure()
    assert err.value.remedy == "pass --model /m"


def test_known_fatal_log_line_ends_the_wait_with_diagnosis(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(
        "INFO starting\nRuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' "
        "doesn't exist\n"
    )
    calls = []

    def probe(url, model, timeout):
        calls.append(1)
        never_ready(url, model, timeout)

    out = wait_ready("http://x", "m", timeout=60, log=log, probe=probe, interval=0.01, pset=PSET)
    assert out.reason == "fatal-log" and len(calls) <= 1  # the first look at the log ends it
    assert out.findings[0].rule_id == "could-not-find-nvcc" and out.findings[0].line_no == 2
    with pytest.raises(ServerUnreachable, match="could-not-find-nvcc") as err:
        out.raise_for_failure()
    assert "CUDA_HOME" in (err.value.remedy or "")


def test_log_offset_skips_earlier_attempts(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text("Could not find nvcc\n")
    offset = log.stat().st_size
    out = wait_ready(
        "http://x",
        "m",
        timeout=0.2,
        log=log,
        log_offset=offset,
        probe=never_ready,
        interval=0.05,
        pset=PSET,
    )
    assert out.reason == "timeout" and not out.findings


def test_cuda_graph_capture_is_a_phase_not_a_fatal_error(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(
        "INFO gpu_model_runner.py:2318] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 12%\n"
    )
    said: list[str] = []
    out = wait_ready(
        "http://x",
        "m",
        timeout=0.5,
        log=log,
        probe=never_ready,
        interval=0.05,
        silence_report=0.1,
        say=said.append,
        pset=PSET,
    )
    assert out.reason == "timeout" and out.phase == "CUDA graph capture"
    assert "still in phase: CUDA graph capture" in out.detail
    assert any("CUDA graph capture in progress" in s and "not a hang" in s for s in said)
    assert [f.rule_id for f in out.findings] == ["cuda-graph-capture-stalled"]  # kept for the restart policy


def test_watcher_tracks_phase_end_and_partial_lines(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    w = LogWatcher(log, PSET.phases)
    assert w.poll() == []  # no file yet
    log.write_text("Capturing CUDA graphs: 50%")
    w.poll()
    assert w.phase is None  # line not complete yet
    with log.open("a") as fh:
        fh.write("\n")
    w.poll()
    assert w.phase == "CUDA graph capture"
    with log.open("a") as fh:
        fh.write("INFO Graph capturing finished in 21 secs, took 0.52 GiB\n")
    w.poll()
    assert w.phase is None


def test_dead_pid_ends_the_wait(tmp_path: Path) -> None:
    calls = []

    def probe(url, model, timeout):
        calls.append(1)
        never_ready(url, model, timeout)

    out = wait_ready(
        "http://x",
        "m",
        timeout=30,
        pid=2**22 + 12345,
        probe=probe,
        interval=0.01,
        pset=PSET,
    )
    assert out.reason == "died" and len(calls) <= 1  # the first liveness check ends it


@pytest.mark.parametrize(
    ("lines", "phase"),
    [
        (
            ["2025-02-27 12:24:22,992 - INFO - flashinfer.jit: Loading JIT ops: batch_mla_attention"],
            "FlashInfer JIT compilation",
        ),
        (
            [
                "2025-02-27 12:24:22,992 - INFO - flashinfer.jit: Loading JIT ops: norm",
                "2025-02-27 12:24:42,108 - INFO - flashinfer.jit: Finished loading JIT ops: norm",
            ],
            None,
        ),
        (["INFO [backends.py:541] Dynamo bytecode transform time: 4.13 s"], "torch.compile"),
        (
            [
                "INFO [backends.py:541] Dynamo bytecode transform time: 4.13 s",
                "INFO [backends.py:215] Compiling a graph for dynamic shape takes 18.63 s",
                "INFO [monitor.py:34] torch.compile takes 22.76 s in total",
            ],
            None,
        ),
        (["INFO [default_loader.py:262] Loading weights took 2.58 seconds"], None),
    ],
)
def test_phases_from_real_log_lines(tmp_path: Path, lines: list[str], phase: str | None) -> None:
    log = tmp_path / "serve.log"
    log.write_text("\n".join(lines) + "\n")
    w = LogWatcher(log, PSET.phases)
    w.poll()
    assert w.phase == phase


def test_only_the_serve_rules_judge_a_server_log(tmp_path: Path) -> None:
    """A build failure quoted in a server log is not a fatal server line; a serve one is."""
    text = (
        "CMake Error at cutlass-subbuild/cutlass-populate-prefix/tmp/"
        "cutlass-populate-gitclone.cmake:31 (message):\n"
        "  Failed to clone repository: 'https://github.com/nvidia/cutlass.git'\n"
        "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist\n"
    )
    log = tmp_path / "serve.log"
    log.write_text(text)
    w = LogWatcher(log, PSET.phases)
    assert w.findings() == []  # nothing read yet
    w.poll()
    assert {f.rule_id for f in diagnose(text)} == {"cutlass-clone-failed", "could-not-find-nvcc"}
    assert [f.rule_id for f in w.findings()] == ["could-not-find-nvcc"]


def test_a_429_probe_waits_for_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared retry rule: a 429 during readiness keeps waiting, for Retry-After seconds."""
    from ocrstack.core.retry import Transient

    waits: list[float] = []
    monkeypatch.setattr("time.sleep", waits.append)
    calls = []

    def probe(url, model, timeout):
        calls.append(1)
        if len(calls) == 1:
            raise ServerUnreachable("busy", "") from Transient("HTTP 429", retry_after=4.0, status=429)
        return "ok"

    out = wait_ready("http://x", "m", timeout=60, probe=probe, interval=0.5, pset=PSET)
    assert out.ready and waits == [4.0]
