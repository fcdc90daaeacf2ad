"""Real end-to-end on CPU (issue 4): tiny MiniCPM-OCR checkpoint served by a real `transformers serve`.

`ocrstack serve --profile tf` starts it on 127.0.0.1 (free port, HF offline), `ocrstack wait-ready`
passes, one real chat request is answered, `ocrstack parse --recognizer openai` parses a real
corpus page through it, and the server is always stopped by pid in the fixture teardown.
Timings are printed (run with -s) and written to ``<tmp>/timings.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.corpus]

transformers = pytest.importorskip("transformers", reason="transformers not installed ('tf' extra)")
if not hasattr(transformers, "MiniCPMOcrForConditionalGeneration"):
    pytest.skip("this transformers has no minicpm_ocr (needs >= 5.21)", allow_module_level=True)

from ocrstack.serving import process  # noqa: E402
from ocrstack.testing.tiny_checkpoint import build_tiny_minicpm_ocr  # noqa: E402

PAGE = "en_single_libtasn1_intro.pdf"
TIMINGS: dict[str, float] = {}


def ocrstack(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ocrstack", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    import os

    root = tmp_path_factory.mktemp("e2e")
    t0 = time.monotonic()
    ckpt = build_tiny_minicpm_ocr(root / "tiny-minicpm-ocr", seed=0)
    TIMINGS["build_checkpoint_s"] = time.monotonic() - t0
    port = process.free_port()
    run_dir = root / "run"
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(HF_HUB_OFFLINE="1", HF_HUB_DISABLE_UPDATE_CHECK="1", NO_PROXY="127.0.0.1,localhost")
    info = {
        "root": root,
        "ckpt": ckpt,
        "port": port,
        "run_dir": run_dir,
        "env": env,
        "url": f"http://127.0.0.1:{port}",
    }
    try:
        t0 = time.monotonic()
        res = ocrstack(
            "serve",
            "--profile",
            "tf",
            "--venv",
            sys.prefix,
            "--model",
            str(ckpt),
            "--port",
            str(port),
            "--offline",
            "--run-dir",
            str(run_dir),
            "--timeout",
            "300",
            env=env,
        )
        TIMINGS["serve_until_ready_s"] = time.monotonic() - t0
        info["serve"] = res
        yield info
    finally:
        pid_file = run_dir / f"serve-{port}.pid"
        pid = None
        if pid_file.exists():
            pid = int(pid_file.read_text())
            stop = ocrstack(
                "serve", "stop", "--port", str(port), "--run-dir", str(run_dir), env=env, timeout=120
            )
            print(stop.stdout, stop.stderr)
        if pid is not None and process.pid_alive(pid):  # serve stop failed: never leave it running
            process.stop_pid(pid, grace=10)
        assert pid is None or not process.pid_alive(pid)
        (root / "timings.json").write_text(json.dumps(TIMINGS, indent=2))
        print("\nCPU end-to-end timings:", json.dumps(TIMINGS, indent=2))


def test_serve_tf_starts_real_transformers_serve(server) -> None:
    res = server["serve"]
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"url: {server['url']}" in res.stdout
    assert f"model: {server['ckpt']}" in res.stdout
    assert "--host 127.0.0.1" in res.stderr and "transformers serve" in res.stderr
    state = process.read_state(server["run_dir"], server["port"])
    assert process.pid_alive(state["pid"])


def test_wait_ready_passes_and_rejects_the_wrong_model_name(server) -> None:
    t0 = time.monotonic()
    ok = ocrstack(
        "wait-ready", server["url"], "--run-dir", str(server["run_dir"]), "--timeout", "60", env=server["env"]
    )
    TIMINGS["wait_ready_warm_s"] = time.monotonic() - t0
    assert ok.returncode == 0, ok.stderr
    assert f"model '{server['ckpt']}'" in ok.stdout
    bad = ocrstack(
        "wait-ready", server["url"], "--model", "minicpm-ocr", "--timeout", "60", env=server["env"]
    )
    assert bad.returncode == 6, bad.stderr  # ServerRejected, at once
    assert "Server is pinned to" in bad.stderr


def test_one_real_chat_request(server) -> None:
    import httpx

    from ocrstack.client.metrics import text_page_png

    body = {
        "model": str(server["ckpt"]),
        "max_tokens": 32,
        "temperature": 0,
        "chat_template_kwargs": {"enable_thinking": False},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": text_page_png()}},
                    {"type": "text", "text": "OCR"},
                ],
            }
        ],
    }
    t0 = time.monotonic()
    r = httpx.post(f"{server['url']}/v1/chat/completions", json=body, timeout=300, trust_env=False)
    TIMINGS["chat_request_32_tokens_s"] = time.monotonic() - t0
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["choices"][0]["message"]["content"]
    assert (
        data["usage"]["completion_tokens"] > 1 and data["usage"]["prompt_tokens"] > 50
    )  # image tokens counted


def test_parse_a_real_page_through_the_server(server, corpus: Path) -> None:
    out = server["root"] / "out"
    t0 = time.monotonic()
    res = ocrstack(
        "parse",
        "--recognizer",
        "openai",
        "--server-url",
        server["url"],
        "--model",
        str(server["ckpt"]),
        "--pages",
        "1",
        "--no-progress",
        "-o",
        str(out),
        str(corpus / PAGE),
        env=server["env"],
    )
    TIMINGS["parse_one_page_s"] = time.monotonic() - t0
    assert res.returncode == 0, res.stderr[-3000:]
    md = (out / PAGE.replace(".pdf", ".md")).read_text(encoding="utf-8")
    assert md.strip()
    doc = json.loads((out / PAGE.replace(".pdf", ".blocks.json")).read_text(encoding="utf-8"))
    assert doc["complete"] and doc["recognizer"] == "openai"
    blocks = doc["pages"][0]["blocks"]
    recognized = [b for b in blocks if b["text"].strip()]
    assert recognized, "no block got text from the server"
    TIMINGS["parse_blocks_recognized"] = len(recognized)
    log = (server["run_dir"] / f"serve-{server['port']}.log").read_text(errors="replace")
    served = log.count('"POST /v1/chat/completions HTTP/1.1" 200')
    assert served >= 2  # readiness probe + at least one block request really reached the server


def test_dspark_check_says_this_server_has_no_metrics(server) -> None:
    res = ocrstack("serve", "dspark-check", server["url"], "--model", str(server["ckpt"]), env=server["env"])
    assert res.returncode == 5
    assert "exposes no Prometheus metrics" in res.stderr
