"""A tiny OpenAI-compatible chat-completions server for tests and the benchmark.

A real HTTP server (stdlib :class:`http.server.ThreadingHTTPServer`) on 127.0.0.1 with knobs for
the behaviours the client must survive:

* ``latency``: seconds each chat request "generates" for (simulated server time);
* ``max_concurrent``: requests generating at once (1 models vLLM ``--max-num-seqs 1``, guide 4.1:
  further requests queue);
* ``fail_first`` + ``fail_status``: the first N chat requests answer ``fail_status`` (e.g. 503);
* ``status`` + ``error_message``: every chat request answers this status (e.g. 400);
* ``pinned_model``: like ``transformers serve``, another ``model`` gets 400 "Server is pinned..." (issue 4);
* ``drop_first``: close the connection without answering for the first N requests;
* ``health_status``: what ``GET /health`` answers (404 = no such route);
* ``probe_latency``: latency for ``max_tokens <= 1`` requests (a readiness probe has no decode
  phase on a real server); default: same as ``latency``;
* ``burst_after`` + ``burst_seconds`` (+ ``burst_status``): when the Nth chat request arrives, every
  chat request answering in the next ``burst_seconds`` s -- those already in flight, new ones and
  probes -- answers ``burst_status`` (a 5xx burst);
* ``poison_nth``: the image of the Nth block request (``max_tokens > 1``) is poison: that request
  and every later one with the same image answer 500, whatever else happens (issue 10);
  :meth:`FakeOpenAIServer.cure` forgets the poison;
* ``warmup_seconds``: for that long after start, ``/health`` and chat answer 503 (model loading);
* ``retry_after``: seconds sent as ``Retry-After`` on every simulated 5xx/429;
* ``metrics``: ``"vllm"``/``"sglang"``: ``GET /metrics`` in that engine's names
  (:func:`metrics_text`): requests generating/queued here plus ``extra_running``/``extra_waiting``
  (another client's load) and ``kv_usage``; None: 404 (llama.cpp without ``--metrics``);
* ``delay``: ``f(body, image_size) -> seconds`` per request, replacing ``latency``;
* ``drip``: block requests' answers (status line on) are written one byte every ``drip`` s;
* ``reply``: ``f(body, image_size) -> str``; default ``"[WxH] <prompt text>"``, so a test can see
  which crop size and prompt the server received. :func:`prompt_replay` builds one that answers
  recorded text per prompt (issue 14: a "Layout Detection:" request gets a MinerU-Diffusion layout
  answer, block prompts their recorded answers).

Every chat request is recorded in ``requests`` (parsed JSON body, headers, image size).
Use in-process (``with FakeOpenAIServer(...) as srv: srv.url``) or as a process: ``python -m
ocrstack.testing.fake_openai --port 0 --latency 0.8`` prints ``READY http://127.0.0.1:PORT`` once listening.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ocrstack.testing.fake_replies import (
    _default_reply,
    drip,
    image_urls,
    metrics_text,
    png_size,
    prompt_replay,
    request_prompt,
)

__all__ = [
    "FakeConfig",
    "FakeOpenAIServer",
    "Recorded",
    "metrics_text",
    "png_size",
    "prompt_replay",
    "request_prompt",
]


@dataclass
class Recorded:
    """One chat request as the server saw it."""

    body: dict[str, Any]
    headers: dict[str, str]
    image_size: tuple[int, int] | None
    started: float
    finished: float = 0.0


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
    burst_after: int | None = None
    burst_seconds: float = 2.0
    burst_status: int = 503
    poison_nth: int | None = None
    warmup_seconds: float = 0.0
    retry_after: float | None = None
    metrics: str | None = None
    extra_running: int = 0
    extra_waiting: int = 0
    kv_usage: float = 0.0
    delay: Callable[[dict[str, Any], tuple[int, int] | None], float] | None = None
    drip: float | None = None


class _Server(ThreadingHTTPServer):
    """No traceback for a client that vanished mid-request (a SIGKILLed service in fault runs)."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeOpenAIServer:
    """The server; ``start()``/``stop()`` or a ``with`` block. ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self, port: int = 0, **config: Any) -> None:
        self.config = FakeConfig(**config)
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._seen = 0
        self._blocks = 0  # block requests (max_tokens > 1) seen
        self._poison: set[str] = set()
        self._burst_until = 0.0
        self._killed = False
        self._running = 0
        self._waiting = 0
        self._started = time.monotonic()
        self._gate = threading.Semaphore(self.config.max_concurrent) if self.config.max_concurrent else None
        self._httpd = _Server(("127.0.0.1", port), self._handler())
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

    def kill(self) -> None:
        """Die like a crashed server: stop listening, and requests in flight get their connection
        closed without an answer."""
        self._killed = True
        self.stop()

    def cure(self) -> None:
        """Forget the poison image (and stop choosing a new one): the next requests succeed."""
        with self._lock:
            self._poison.clear()
            self.config.poison_nth = None

    def metrics_body(self) -> str:
        """The ``/metrics`` text now (see :func:`metrics_text`)."""
        cfg = self.config
        with self._lock:
            running, waiting = self._running, self._waiting
        return metrics_text(
            str(cfg.metrics),
            running + cfg.extra_running,
            waiting + cfg.extra_waiting,
            cfg.kv_usage,
            cfg.model,
        )

    def _generate(self, seconds: float) -> None:
        """Queue for a generation slot (``max_concurrent``), then "generate" for ``seconds``.

        The waiting/running counts are what ``/metrics`` reports.
        """
        with self._lock:
            self._waiting += 1
        try:
            if self._gate is not None:
                self._gate.acquire()
            with self._lock:
                self._waiting -= 1
                self._running += 1
            time.sleep(seconds)
        finally:
            if self._gate is not None:
                self._gate.release()
            with self._lock:
                self._running -= 1

    def _fault(self, body: dict[str, Any], url: str) -> int | None:
        """The simulated failure status for this chat request, or None (burst, poison, warm-up)."""
        cfg = self.config
        now = time.monotonic()
        with self._lock:
            if now - self._started < cfg.warmup_seconds:
                return 503
            block = int(body.get("max_tokens") or 2) > 1
            if block:
                self._blocks += 1
                if cfg.poison_nth is not None and self._blocks == cfg.poison_nth:
                    self._poison.add(url)
            if block and url in self._poison:
                return 500
            if cfg.burst_after is not None and self._seen == cfg.burst_after:
                self._burst_until = now + cfg.burst_seconds
            if now < self._burst_until:
                return cfg.burst_status
        return None

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

            def log_message(self, format: str, *args: Any) -> None:
                return  # quiet

            def _send(self, status: int, payload: Any, text: str | None = None) -> None:
                data = text.encode() if text is not None else json.dumps(payload).encode()
                drip(self)  # a block request with the ``drip`` knob: the answer is written slowly
                self.send_response(status)
                kind = "text/plain; version=0.0.4" if text is not None else "application/json"
                self.send_header("Content-Type", kind)
                if status in (429, 500, 502, 503) and server.config.retry_after is not None:
                    self.send_header("Retry-After", f"{server.config.retry_after:g}")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (timeout test): not an error here

            def do_GET(self) -> None:
                cfg = server.config
                warming = time.monotonic() - server._started < cfg.warmup_seconds
                if self.path == "/health":
                    if warming:
                        self._send(503, {"error": {"message": "model loading"}})
                    elif cfg.health_status == 200:
                        self._send(200, {"status": "ok"})
                    else:
                        self._send(cfg.health_status, {"error": {"message": "not ready"}})
                elif self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": cfg.model, "object": "model"}]})
                elif self.path == "/metrics" and cfg.metrics:
                    self._send(200, None, text=server.metrics_body())
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
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
                urls = image_urls(body)
                size = png_size(urls[-1]) if urls else None  # the last image's size, as recorded before
                rec = Recorded(body, dict(self.headers), size, time.monotonic())
                with server._lock:
                    server.requests.append(rec)
                image = urls[0] if urls else ""
                fault = server._fault(body, hashlib.sha256(image.encode()).hexdigest())
                if fault is not None:
                    self._send(fault, {"error": {"message": f"simulated {fault}"}})
                    return
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
                self.drip = cfg.drip if int(body.get("max_tokens") or 2) > 1 else None
                delay = cfg.latency if cfg.delay is None else cfg.delay(body, size)
                if cfg.probe_latency is not None and int(body.get("max_tokens") or 2) <= 1:
                    delay = cfg.probe_latency
                server._generate(delay)
                if server._killed:  # crashed while generating: no answer
                    self.close_connection = True
                    self.connection.close()
                    return
                if time.monotonic() < server._burst_until:  # a burst fails the requests in flight too
                    self._send(cfg.burst_status, {"error": {"message": f"simulated {cfg.burst_status}"}})
                    return
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
