"""A stand-in server process for the restart-policy tests (not a test module).

Usage: ``python fake_server.py --port N [--enforce-eager]`` with ``FAKE_STATE`` (a directory)
and ``FAKE_MODE`` in the environment. Every start appends its argv to ``FAKE_STATE/starts``.

Modes:
  capture-sigterm: without --enforce-eager, log a CUDA graph capture line; the 1st start then
      dies by SIGTERM, later starts hang in the capture (until the wait times out); with
      --enforce-eager, serve /health and /v1/chat/completions like an OpenAI server.
  fatal: log a CUDA OOM line (a known fatal doctor rule) and hang.
  ok: serve at once.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

MODEL = "fake-model"


class Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200 if self.path == "/health" else 404, {"status": "ok"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if body.get("model") != MODEL:
            self._send(400, {"detail": f"Server is pinned to '{MODEL}'; requested '{body.get('model')}'."})
            return
        self._send(
            200,
            {
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "length"}
                ],
                "model": MODEL,
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            },
        )

    def log_message(self, fmt: str, *args) -> None:
        print("HTTP " + fmt % args, flush=True)


def main() -> None:
    port = int(sys.argv[sys.argv.index("--port") + 1])
    state = Path(os.environ["FAKE_STATE"])
    mode = os.environ.get("FAKE_MODE", "ok")
    with (state / "starts").open("a") as fh:
        fh.write(json.dumps(sys.argv[1:]) + "\n")
    n = len((state / "starts").read_text().splitlines())
    print(f"INFO fake server start {n} argv={sys.argv[1:]}", flush=True)
    if mode == "fatal":
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
        time.sleep(600)
    if mode == "capture-sigterm" and "--enforce-eager" not in sys.argv:
        print(
            "INFO gpu_model_runner.py:2318] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 10%",
            flush=True,
        )
        if n == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(600)
    HTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
