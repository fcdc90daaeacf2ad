"""Guide 4.4 restart policy and fatal-log handling, with a fake server process (fake_server.py)."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
import yaml

from ocrstack.backends import profiles
from ocrstack.core.errors import ConfigError, ServerUnreachable
from ocrstack.serving import process, runner
from ocrstack.serving.options import ServeOptions

pytestmark = [pytest.mark.proc, pytest.mark.server]

FAKE = Path(__file__).with_name("fake_server.py")


@pytest.fixture
def fake_profiles(tmp_path: Path) -> Path:
    data = yaml.safe_load(profiles.default_profiles_file().read_text())
    # the llama.cpp back-end: no Python environment, the build is "its program is on PATH"
    data["builds"]["fake"] = {"engine": "llama.cpp", "description": "test double"}
    data["profiles"] = {
        "fake": {
            "description": "fake server",
            "source": "tests",
            "build": "fake",
            "program": [sys.executable, str(FAKE)],
            "args": [["--port", "${port}"]],
            "served-name": "fake-model",
            "enforce-eager-flag": "--enforce-eager",
        }
    }
    path = tmp_path / "profiles.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def started(tmp_path: Path):
    """Yield a list the test fills with ServeResults; every recorded server is stopped by pid."""
    results: list[runner.ServeResult] = []
    yield results
    for res in results:
        for a in res.attempts:
            process.stop_pid(a.pid, grace=5)


def serve(tmp_path: Path, profiles_file: Path, mode: str, monkeypatch, timeout: float = 3.0, restart=True):
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    monkeypatch.setenv("FAKE_STATE", str(state))
    monkeypatch.setenv("FAKE_MODE", mode)
    opts = ServeOptions(
        "fake",
        profiles_file=profiles_file,
        vars={"port": process.free_port()},
        run_dir=tmp_path / "run",
        timeout=timeout,
        restart=restart,
    )
    return opts, state


def starts(state: Path) -> list[list[str]]:
    return [json.loads(ln) for ln in (state / "starts").read_text().splitlines()]


def test_sigterm_then_timeout_in_capture_restarts_once_then_with_enforce_eager(
    tmp_path, fake_profiles, monkeypatch, started
) -> None:
    opts, state = serve(tmp_path, fake_profiles, "capture-sigterm", monkeypatch)
    said: list[str] = []
    res = runner.serve(opts, say=said.append, interval=0.2)
    started.append(res)
    argvs = starts(state)
    assert len(argvs) == 3
    assert "--enforce-eager" not in argvs[0] and "--enforce-eager" not in argvs[1]
    assert argvs[2][-1] == "--enforce-eager"
    reasons = [a.outcome.reason for a in res.attempts]
    assert reasons == ["died", "timeout", "ready"]
    assert res.attempts[0].outcome.returncode == -15 and res.attempts[0].outcome.phase == "CUDA graph capture"
    assert any("restarting once" in s for s in said) and any("--enforce-eager" in s for s in said)
    assert process.read_pid(res.plan.pid_file) == res.pid  # pid file names the running server
    state_json = process.read_state(res.plan.run_dir, res.plan.port)
    assert state_json["pid"] == res.pid and state_json["argv"][-1] == "--enforce-eager"
    msg = process.stop(res.plan.run_dir, res.plan.port, grace=5)
    assert "stopped" in msg and not process.pid_alive(res.pid)
    assert not res.plan.pid_file.exists()


def test_no_restart_without_the_policy(tmp_path, fake_profiles, monkeypatch) -> None:
    opts, state = serve(tmp_path, fake_profiles, "capture-sigterm", monkeypatch, restart=False)
    with pytest.raises(ServerUnreachable, match="SIGTERM"):
        runner.serve(opts, say=lambda m: None, interval=0.2)
    assert len(starts(state)) == 1


def test_known_fatal_line_stops_at_once_without_restart(tmp_path, fake_profiles, monkeypatch) -> None:
    opts, state = serve(tmp_path, fake_profiles, "fatal", monkeypatch, timeout=60)
    with pytest.raises(ServerUnreachable, match="cuda-oom") as err:
        runner.serve(opts, say=lambda m: None, interval=0.2)
    assert "gpu-memory-utilization" in (err.value.remedy or "")
    assert len(starts(state)) == 1
    assert not (tmp_path / "run" / f"serve-{opts.vars['port']}.pid").exists()


def test_port_in_use_is_refused_before_launch(tmp_path, fake_profiles, monkeypatch) -> None:
    opts, state = serve(tmp_path, fake_profiles, "ok", monkeypatch)
    with socket.socket() as s:
        s.bind(("127.0.0.1", opts.vars["port"]))
        s.listen()
        with pytest.raises(ConfigError, match="already in use"):
            runner.serve(opts, say=lambda m: None)
    assert not (state / "starts").exists()
