"""Fixtures for the verify tests: a scriptable OpenAI-compatible + /metrics server on 127.0.0.1 (thread)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

METRICS = Path(__file__).resolve().parents[1] / "data" / "metrics"


@dataclass
class Script:
    """What the fake server answers: a chat reply, and /metrics before/after ``switch_after`` chats."""

    content: str = "hello"
    prompt_tokens: int = 118
    completion_tokens: int = 5
    status: int = 200
    metrics_before: str = ""
    metrics_after: str = ""
    switch_after: int = 1
    chats: list[dict] = field(default_factory=list)


@pytest.fixture
def openai_server() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/metrics":
                text = (
                    script.metrics_after
                    if len(script.chats) >= script.switch_after
                    else script.metrics_before
                )
                return self._send(200 if text else 404, text.encode(), "text/plain; version=0.0.4")
            return self._send(404, b"{}")

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.chats.append(body)
            if script.status != 200:
                return self._send(script.status, json.dumps({"error": {"message": "nope"}}).encode())
            reply = {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": script.content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": script.prompt_tokens,
                    "completion_tokens": script.completion_tokens,
                },
            }
            return self._send(200, json.dumps(reply).encode())

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}", script
    finally:
        srv.shutdown()
        srv.server_close()
