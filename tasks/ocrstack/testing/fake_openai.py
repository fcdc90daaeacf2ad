"""A tiny OpenAI-compatible chat-completions server for tests and the benchmark.

A real HTTP server (stdlib :class:`http.server.ThreadingHTTPServer`) on
127.0.0.1 with knobs for the behaviours the client must survive:

* ``latency``: seconds each chat request "generates" for (simulated server time);
* ``max_concurrent``: requests generating at once (1 models vLLM ``--max-num-seqs 1``,
  guide 4.1: further requests queue);
* ``fail_first`` + ``fail_status``: the first N chat requests answer ``fail_status``
  (e.g. 503), later ones succeed;
* ``status`` + ``error_message``: every chat request answers this status (e.g. 400);
* ``pinned_model``: mimic ``transformers serve``: a different ``model`` gets 400
  "Server is pinned to ..." (issue 4);
* ``drop_first``: close the connection without answering for the first N requests;
* ``health_status``: what ``GET /health`` answers (404 = no such route);
* ``probe_latency``: latency for ``max_tokens <= 1`` requests (a readiness probe has no
  decode phase on a real server); default: same as ``latency``;
* ``reply``: ``f(body, image_size) -> str``; default ``"[WxH] <prompt text>"``, so a
  test can see which crop size and prompt the server received. :func:`prompt_replay` builds one
  that answers recorded text per prompt (issue 14: a "Layout Detection:" request gets a
  MinerU-Diffusion layout answer, block prompts their recorded answers).

Every chat request is recorded in ``requests`` (parsed JSON body, headers, image size).
Use in-process (``with FakeOpenAIServer(...) as srv: srv.url``) or as a process:
``python -m ocrstack.testing.fake_openai --port 0 --latency 0.8`` prints
``READY http://127.0.0.1:PORT`` on stdout once listening.
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    """One chat request as the server saw it."""

    body: dict[str, Any]
    headers: dict[str, str]
    image_size: tuple[int, int] | None
    started: float
    finished: float = 0.0


def png_size(data_url: str) -> tuple[int, int] | None:
    """Width/height from a ``data:image/png;base64,...`` URL (reads the IHDR chunk only), or None."""
    if not data_url.startswith("data:image/png;base64,"):
        return None
    head = base64.b64decode(data_url[len("data:image/png;base64,") :][:44])
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def _default_reply(body: dict[str, Any], size: tuple[int, int] | None) -> str:
    prompt = ""
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, list):
            prompt += "".join(p.get("text", "") for p in content if p.get("type") == "text")
    dims = f"{size[0]}x{size[1]}" if size else "noimage"
    return f"[{dims}] {prompt.strip()}"


def request_prompt(body: dict[str, Any]) -> str:
    """The text parts of the last user message of a chat body, joined and stripped."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if p.get("type") == "text").strip()
    return str(content or "").strip()


def prompt_replay(
    answers: dict[str, str], default: str | None = None
) -> Callable[[dict[str, Any], tuple[int, int] | None], str]:
    """A ``reply`` that answers by prompt: ``answers`` maps a prompt (compared stripped, e.g.
    ``"Layout Detection:"``) to the recorded answer; an unknown prompt gets ``default`` or, when
    None, the default ``"[WxH] prompt"`` echo."""
    table = {k.strip(): v for k, v in answers.items()}

    def reply(body: dict[str, Any], size: tuple[int, int] | None) -> str:
        prompt = request_prompt(body)
        if prompt in table:
            return table[prompt]
        return default if default is not None else _default_reply(body, size)

    return reply


@dataclass
class FakeConfig:
    """Behaviour knobs (see the module docstring)."""

    model: str = "minicpm-ocr"
    latency: float = 0.0
    max_concurrent: int | None = None
    fail_first: int = 0
    fail_status: int = 503
    status: int | None = None
    error_message: str = "bad request"
    pinned_model: str | None = None
    drop_first: int = 0
    health_status: int = 200
    reply: Callable[[dict[str, Any], tuple[int, int] | None], str] = _default_reply
    finish_reason: str = "stop"
    probe_latency: float | None = None


class FakeOpenAIServer:
    """The server; ``start()``/``stop()`` or a ``with`` block. ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self, port: int = 0, **config: Any) -> None:
        self.config = FakeConfig(**config)
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._seen = 0
        self._gate = threading.Semaphore(self.config.max_concurrent) if self.config.max_concurrent else None
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL without ``/v1``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeOpenAIServer:
        """Serve in a daemon thread; returns self."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def chat_count(self) -> int:
        """Number of chat requests received (failed ones included)."""
        with self._lock:
            return self._seen

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body are separate writes: without TCP_NODELAY a keep-alive client
            # waits ~40 ms per answer for the delayed ACK (Nagle), which is not server time.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                return  # quiet

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (timeout test): not an error here

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                cfg = server.config
                if self.path == "/health":
                    if cfg.health_status == 200:
                        self._send(200, {"status": "ok"})
                    else:
                        self._send(cfg.health_status, {"error": {"message": "not ready"}})
                elif self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": cfg.model, "object": "model"}]})
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                cfg = server.config
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path != "/v1/chat/completions":
                    self._send(404, {"detail": "Not Found"})
                    return
                with server._lock:
                    server._seen += 1
                    nth = server._seen
                if nth <= cfg.drop_first:
                    self.close_connection = True
                    self.connection.close()
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, {"error": {"message": "invalid JSON"}})
                    return
                size = None
                for msg in body.get("messages", []):
                    for part in msg.get("content") if isinstance(msg.get("content"), list) else []:
                        if part.get("type") == "image_url":
                            size = png_size(part["image_url"]["url"])
                rec = Recorded(body, dict(self.headers), size, time.monotonic())
                with server._lock:
                    server.requests.append(rec)
                if nth <= cfg.fail_first:
                    self._send(cfg.fail_status, {"error": {"message": f"simulated {cfg.fail_status}"}})
                    return
                if cfg.status is not None:
                    self._send(cfg.status, {"error": {"message": cfg.error_message, "code": cfg.status}})
                    return
                if cfg.pinned_model and body.get("model") != cfg.pinned_model:
                    self._send(
                        400,
                        {
                            "error": {
                                "message": f"Server is pinned to {cfg.pinned_model}, got {body.get('model')}"
                            }
                        },
                    )
                    return
                delay = cfg.latency
                if cfg.probe_latency is not None and int(body.get("max_tokens") or 2) <= 1:
                    delay = cfg.probe_latency
                if server._gate is not None:
                    with server._gate:
                        time.sleep(delay)
                elif delay:
                    time.sleep(delay)
                text = cfg.reply(body, size)
                rec.finished = time.monotonic()
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{nth}",
                        "object": "chat.completion",
                        "model": body.get("model"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": cfg.finish_reason,
                                "message": {"role": "assistant", "content": text},
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": max(1, len(text) // 4)},
                    },
                )

        return Handler


def main(argv: list[str] | None = None) -> int:
    """Run a fake server until killed; prints ``READY URL`` once listening."""
    p = argparse.ArgumentParser(prog="python -m ocrstack.testing.fake_openai")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--model", default="minicpm-ocr")
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--max-concurrent", type=int, default=None)
    p.add_argument("--status", type=int, default=None)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--probe-latency", type=float, default=None)
    args = p.parse_args(argv)
    srv = FakeOpenAIServer(
        args.port,
        model=args.model,
        latency=args.latency,
        max_concurrent=args.max_concurrent,
        status=args.status,
        fail_first=args.fail_first,
        probe_latency=args.probe_latency,
    )
    print(f"READY {srv.url}", flush=True)
    try:
        srv._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
