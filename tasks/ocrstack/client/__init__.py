"""HTTP side of the ``openai`` recognizer: request bodies, endpoint probe, multi-server dispatch, faults.

Rules and their sources:

* Request shape: OpenAI chat completions with the crop as an ``image_url`` PNG
  data URL followed by the prompt text; ``chat_template_kwargs: {enable_thinking:
  false}`` in the body (guide 5: otherwise the output may be empty or garbled);
  greedy decoding (``temperature: 0``) by default.
* Faults (guide 8, issue 3): connection refused, timeouts and 5xx are retried a
  bounded number of times with exponential backoff; a 4xx is never retried and
  raises :class:`ServerRejected` at once with the server's message and the known
  cause (the guide's SDK retried 400s silently for 600 s, which looked like a hang).
* Several servers (guide 4.1: with ``--max-num-seqs 1`` requests queue, so
  throughput comes from more instances): each server has its own pool of
  ``concurrency`` worker threads pulling from one shared queue, so a slow server
  simply takes fewer jobs and a dead one takes none: a failing server cools down
  (exponential backoff) and is re-checked with ``/health`` before it takes work
  again, while its jobs go back to the queue for the others.
* Readiness (guide 4.4 / issue 4): ``/v1/models`` can answer before warm-up, so
  :func:`probe` checks ``/health`` and sends one tiny real image request.
* Loopback URLs bypass environment proxies (guide 8: ``no_proxy=127.0.0.1``).
* API keys only travel in the ``Authorization`` header; they are never part of
  an error message, a log line or a ``repr``.
"""

from __future__ import annotations

import base64
import io
import queue
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from PIL import Image, ImageChops

from ocrstack.core.errors import ServerRejected, ServerUnreachable, UsageError

CHAT_PATH = "/v1/chat/completions"
#: Seconds to wait for a TCP connection: an absent server fails in seconds, not after the read timeout.
CONNECT_TIMEOUT = 5.0
#: Backoff: first retry after BACKOFF_BASE s, doubling, capped at BACKOFF_MAX s (plus up to 25 % jitter).
BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def base_url(url: str) -> str:
    """Normalise a server URL: no trailing slash, no trailing ``/v1`` (``http://h:p/v1/`` -> ``http://h:p``).

    Raises:
        UsageError: not an ``http(s)://host[:port]`` URL.
    """
    text = url.strip().rstrip("/")
    if text.endswith("/v1"):
        text = text[:-3]
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"server URL '{url}' is not an http(s) URL", "use e.g. --server-url http://127.0.0.1:18499"
        )
    return text


def curl_hint(url: str) -> str:
    """The guide 4.4 check for ``url``: ``curl --noproxy 127.0.0.1 URL/v1/models``."""
    return f"curl --noproxy 127.0.0.1 {base_url(url)}/v1/models"


def make_client(
    url: str, *, timeout: float, api_key: str | None = None, connections: int = 4
) -> httpx.Client:
    """An :class:`httpx.Client` for one server.

    Args:
        timeout: read/write timeout in seconds (the connect timeout is ``min(CONNECT_TIMEOUT, timeout)``).
        api_key: optional bearer token (``Authorization`` header only).
        connections: connection-pool size (= in-flight requests to this server).
    Loopback hosts ignore ``HTTP(S)_PROXY`` from the environment (guide 8, pip/proxy row).
    Plain ``http://`` URLs skip loading the CA bundle (unused without TLS; it costs ~0.1 s per client).
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.Client(
        base_url=base_url(url),
        timeout=httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout)),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        headers=headers,
        trust_env=host not in _LOOPBACK,
        verify=parts.scheme == "https",
    )


def is_grey(image: Image.Image, strip: int = 128) -> bool:
    """True when every pixel of an RGB ``image`` has R == G == B.

    Checked in horizontal strips of ``strip`` rows so the extra memory is a few
    hundred KB rather than several copies of a page, stopping at the first colour strip.
    """
    w, h = image.size
    for y in range(0, h, strip):
        r, g, b = image.crop((0, y, w, min(h, y + strip))).split()
        if (
            ImageChops.difference(r, g).getbbox() is not None
            or ImageChops.difference(g, b).getbbox() is not None
        ):
            return False
    return True


def png_data_url(image: Image.Image, compress_level: int = 1) -> str:
    """Encode ``image`` as ``data:image/png;base64,...`` (PNG is lossless; level 1 favours speed).

    An RGB image whose three channels are equal (a black-and-white or grey page) is
    sent as a one-channel ``L`` PNG: servers load images with ``.convert("RGB")``
    (vLLM, transformers) or three-channel decoding (llama.cpp), which gives back
    exactly the same pixels, and the encode takes about half the time.
    """
    if image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    if image.mode == "RGB" and is_grey(image):
        image = image.getchannel(0)
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=compress_level)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def chat_body(
    model: str,
    prompt: str,
    image_url: str,
    *,
    system: str | None = None,
    max_tokens: int = 4096,
    temperature: float = 0.0,
    enable_thinking: bool = False,
) -> dict[str, Any]:
    """Build one chat-completions request body.

    Shape: ``messages = [system?, {role: user, content: [image_url, text]}]``, the
    image before the text (MinerU prompts start with a newline for that reason);
    ``chat_template_kwargs.enable_thinking`` false by default (guide 5);
    ``temperature`` 0 = greedy decoding.
    """
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": image_url}},
                {"type": "text", "text": prompt},
            ],
        }
    )
    return {
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": False,
        "chat_template_kwargs": {"enable_thinking": enable_thinking},
    }


def server_message(response: httpx.Response, limit: int = 400) -> str:
    """The error text of a non-2xx answer (``error.message``, ``detail``, ``message`` or body), one line."""
    text = ""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            text = str(err.get("message") or err)
        elif err:
            text = str(err)
        else:
            text = str(data.get("detail") or data.get("message") or data)
    if not text:
        text = response.text
    text = " ".join(text.split())
    return text[:limit] + ("..." if len(text) > limit else "")


def rejection_cause(status: int, message: str, *, model: str, image: bool = True) -> str:
    """The known cause and fix for a 4xx answer (guide 8 rows, issue 4), as a remedy string."""
    low = message.lower()
    if "pinned to" in low:
        return (
            "`transformers serve` serves one model and its name differs from --model "
            f"('{model}'): pass --model with the name in the message (guide 4.1: serve and parse names match)"
        )
    if status in (401, 403):
        return "the server wants an API key: set OPENAI_API_KEY or pass --api-key"
    if status == 404 and ("model" in low or "does not exist" in low):
        return (
            f"the server does not serve a model named '{model}': pass --model with its --served-model-name "
            f"(guide 4.1); list them with: curl --noproxy 127.0.0.1 URL/v1/models"
        )
    if status == 404:
        return "no chat-completions route at this URL: pass the server's base URL (http://host:port)"
    if status == 413:
        return "the crop is too large for the server: lower --dpi or raise the server's request size limit"
    if status == 429:
        return "the server rate-limits requests: lower --concurrency or add --server-url instances"
    if status == 400 and (
        "context length" in low or "max_model_len" in low or "maximum" in low and "token" in low
    ):
        return "prompt + max_tokens exceed the server's --max-model-len: lower --max-tokens or --dpi"
    if status == 400 and image:
        return (
            "a 400 on image requests means the vLLM server lacks --trust-request-mm-kwargs (both guide 4 "
            "profiles need it), or, for the standard server, "
            "--limit-mm-per-prompt '{\"image\": 36}' (guide 8); "
            "restart it with `ocrstack serve --profile ...`"
        )
    return "the server refused the request; read its message above (4xx are not retried, guide 8)"


@dataclass(frozen=True)
class Completion:
    """One answered request: ``text`` (content, ``""`` if null), ``finish_reason``, server, seconds."""

    text: str
    finish_reason: str | None
    server: str
    seconds: float
    attempts: int
    usage: dict[str, Any] = field(default_factory=dict)


class _Retryable(Exception):
    """Connection error, timeout or 5xx: may succeed elsewhere or later."""


def _post_chat(
    client: httpx.Client, body: dict[str, Any], model: str
) -> tuple[str, str | None, dict[str, Any]]:
    """POST one chat request. Returns ``(text, finish_reason, usage)``.

    Raises:
        ServerRejected: 4xx (never retried).
        _Retryable: connection error, timeout, 5xx, or an unreadable 2xx body.
    """
    url = f"{client.base_url}".rstrip("/")
    try:
        response = client.post(CHAT_PATH, json=body)
    except httpx.TimeoutException as exc:
        raise _Retryable(f"{url}: timed out ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise _Retryable(f"{url}: {type(exc).__name__}: {exc}") from exc
    if 400 <= response.status_code < 500:
        msg = server_message(response)
        raise ServerRejected(
            f"server {url} rejected the request with HTTP {response.status_code}: {msg}",
            rejection_cause(response.status_code, msg, model=model),
            status=response.status_code,
        )
    if response.status_code >= 500 or response.status_code < 200 or response.status_code >= 300:
        raise _Retryable(f"{url}: HTTP {response.status_code}: {server_message(response, 200)}")
    try:
        data = response.json()
        choice = data["choices"][0]
        text = choice.get("message", {}).get("content") or ""
        return str(text), choice.get("finish_reason"), dict(data.get("usage") or {})
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise _Retryable(f"{url}: answer is not a chat completion ({exc})") from exc


def chat_once(
    url: str, body: dict[str, Any], *, timeout: float = 600.0, api_key: str | None = None
) -> Completion:
    """Send one chat-completions request to ``url`` without retries (checks, not parsing).

    Used by the DSpark ``/metrics`` proof and the two-backend check, which must see the
    server's first answer. ``body`` is usually from :func:`chat_body`.

    Raises:
        ServerRejected: a 4xx, with the known cause (guide 8).
        ServerUnreachable: connection error, timeout, 5xx or an answer that is not a chat completion.
    """
    start = time.monotonic()
    with make_client(url, timeout=timeout, api_key=api_key, connections=1) as client:
        try:
            text, finish, usage = _post_chat(client, body, str(body.get("model", "")))
        except _Retryable as exc:
            raise ServerUnreachable(str(exc), f"check the server log; {curl_hint(url)}") from exc
    return Completion(text, finish, base_url(url), time.monotonic() - start, 1, usage)


# ------------------------------------------------------------------------------------------- probe


@dataclass(frozen=True)
class ProbeResult:
    """What :func:`probe` saw. ``health``: status of ``/health`` (None = no such route, 404)."""

    url: str
    health: int | None
    models: tuple[str, ...]
    reply: str
    seconds: float


def _tiny_png() -> str:
    return png_data_url(Image.new("RGB", (64, 64), "white"))


def probe(url: str, model: str, timeout: float = 30.0, api_key: str | None = None) -> ProbeResult:
    """Check that ``url`` can really answer: ``/health``, then one tiny real image request.

    ``/v1/models`` alone is not trusted (some servers list the model before
    warm-up; ``transformers serve`` lists nothing for a local path), it is only read
    for the error message. The tiny request (64x64 white PNG, ``max_tokens: 1``)
    goes through the same path as a crop, so a server that rejects image requests
    (guide 8: missing ``--trust-request-mm-kwargs``) is caught before the first page.

    Args:
        url: server base URL (``http://127.0.0.1:18499``; a trailing ``/v1`` is accepted).
        model: served model name sent in the request (guide 4.1).
        timeout: seconds for the tiny request; connecting gives up after ``min(5, timeout)`` s.
        api_key: optional bearer token.
    Returns:
        :class:`ProbeResult`.
    Raises:
        ServerUnreachable: connection refused / timed out / ``/health`` not 200 or 404 / 5xx;
            the message has the URL and the ``curl --noproxy 127.0.0.1 URL/v1/models`` hint.
        ServerRejected: the tiny request got a 4xx (message and known cause).
    """
    base = base_url(url)
    start = time.monotonic()
    remedy = (
        f"start the server (ocrstack serve ...) or fix --server-url; check it with: {curl_hint(base)} "
        "(guide 4.4: the first start takes about 3 minutes)"
    )
    with make_client(base, timeout=timeout, api_key=api_key, connections=1) as client:
        try:
            health = client.get(
                "/health", timeout=httpx.Timeout(min(10.0, timeout), connect=min(CONNECT_TIMEOUT, timeout))
            )
        except httpx.TransportError as exc:
            raise ServerUnreachable(
                f"no server answers at {base} ({type(exc).__name__}: {exc})", remedy
            ) from exc
        health_status: int | None = health.status_code
        if health.status_code == 404:
            health_status = None  # no /health route (llama.cpp, SGLang and vLLM have one)
        elif health.status_code != 200:
            raise ServerUnreachable(
                f"server at {base} is not ready: /health answered HTTP {health.status_code} "
                f"({server_message(health, 200)})",
                remedy,
            )
        models: tuple[str, ...] = ()
        try:
            listed = client.get("/v1/models", timeout=min(10.0, timeout))
            if listed.status_code == 200:
                models = tuple(str(m.get("id")) for m in listed.json().get("data", []) if isinstance(m, dict))
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        body = chat_body(model, "OCR", _tiny_png(), max_tokens=1)
        try:
            text, _, _ = _post_chat(client, body, model)
        except ServerRejected as exc:
            if models and model not in models:
                exc.remedy = (
                    f"the server lists models {list(models)}, not '{model}': pass --model with one of them "
                    f"(guide 4.1). {exc.remedy}"
                )
                exc.args = (exc.render(),)
            raise
        except _Retryable as exc:
            raise ServerUnreachable(
                f"server at {base} accepted the connection but a 1-token image request failed ({exc}); "
                "it may still be warming up",
                remedy,
            ) from exc
    return ProbeResult(base, health_status, models, text, time.monotonic() - start)


# ---------------------------------------------------------------------------------------- dispatch


class JobGroup:
    """Jobs that belong together (one page); cancelling fails the not-yet-sent ones at once."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def cancel(self, error: BaseException) -> None:
        """Fail every job of this group that has not been sent yet with ``error``."""
        if self.error is None:
            self.error = error


@dataclass
class _Job:
    body: dict[str, Any]
    future: Future[Completion]
    group: JobGroup | None
    attempts: int = 0
    errors: list[str] = field(default_factory=list)


class _Server:
    def __init__(self, url: str, client: httpx.Client) -> None:
        self.url = url
        self.client = client
        self.lock = threading.Lock()
        self.failures = 0  # consecutive
        self.cool_until = 0.0
        self.checking = False
        self.verified = False  # half-open: /health passed after a fault, the next request decides
        self.done = 0
        self.failed = 0


class Dispatcher:
    """Send chat requests to several servers, ``concurrency`` in flight per server.

    One shared FIFO queue; each server runs ``concurrency`` worker threads that
    take the next job only while the server is healthy. On a retryable fault the
    server cools down for ``min(backoff_base * 2**(n-1), backoff_max)`` s (n =
    consecutive faults), is re-checked with ``/health`` before taking work again,
    and the job goes back to the queue (any server may take it) until it has
    been tried ``retries + 1`` times. When every server has failed more than
    ``retries`` times in a row, queued jobs fail at once with
    :class:`ServerUnreachable` instead of waiting forever. 4xx answers fail the
    job at once with :class:`ServerRejected`.

    Thread-safe; :meth:`submit` returns a :class:`concurrent.futures.Future`.
    Call :meth:`close` when done (or use ``with``).
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        model: str,
        concurrency: int = 4,
        timeout: float = 600.0,
        retries: int = 3,
        api_key: str | None = None,
        backoff_base: float = BACKOFF_BASE,
        backoff_max: float = BACKOFF_MAX,
    ) -> None:
        if not urls:
            raise UsageError("no server URL given", "pass --server-url http://HOST:PORT (repeatable)")
        if concurrency < 1:
            raise UsageError(f"--concurrency must be >= 1, got {concurrency}", "use --concurrency 1 or more")
        if retries < 0:
            raise UsageError(f"--retries must be >= 0, got {retries}", "use --retries 0 or more")
        self.model = model
        self.retries = retries
        self.timeout = timeout
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._queue: queue.Queue[_Job] = queue.Queue()
        self._closed = threading.Event()
        self.servers = [
            _Server(base_url(u), make_client(u, timeout=timeout, api_key=api_key, connections=concurrency))
            for u in dict.fromkeys(urls)
        ]
        self._threads = [
            threading.Thread(target=self._work, args=(srv,), name=f"ocr-{srv.url}-{i}", daemon=True)
            for srv in self.servers
            for i in range(concurrency)
        ]
        for t in self._threads:
            t.start()

    def __repr__(self) -> str:  # never shows the API key
        return f"Dispatcher(servers={[s.url for s in self.servers]}, retries={self.retries})"

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, body: dict[str, Any], group: JobGroup | None = None) -> Future[Completion]:
        """Queue one chat request body; the future gives a :class:`Completion` or raises the error."""
        fut: Future[Completion] = Future()
        if self._closed.is_set():
            fut.set_exception(ServerUnreachable("recognizer already closed", "create a new one"))
            return fut
        self._queue.put(_Job(body, fut, group))
        return fut

    def mark_down(self, url: str) -> None:
        """Treat ``url`` as failed (e.g. its probe failed): it cools down and is re-checked before use."""
        for srv in self.servers:
            if srv.url == base_url(url):
                self._fault(srv)

    def stats(self) -> dict[str, dict[str, int]]:
        """``{url: {"done": n, "failed": n}}``: requests answered / faults per server."""
        return {s.url: {"done": s.done, "failed": s.failed} for s in self.servers}

    def close(self) -> None:
        """Stop the workers (pending jobs fail with ServerUnreachable) and close the HTTP clients."""
        self._closed.set()
        for t in self._threads:
            t.join(timeout=2)
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if not job.future.done():
                job.future.set_exception(
                    ServerUnreachable("recognizer closed before the request was sent", "")
                )
        for srv in self.servers:
            srv.client.close()

    # -- internals

    def _fault(self, srv: _Server) -> None:
        with srv.lock:
            srv.failures += 1
            srv.failed += 1
            srv.verified = False
            delay = min(self.backoff_base * 2 ** (srv.failures - 1), self.backoff_max)
            srv.cool_until = time.monotonic() + delay * (1 + 0.25 * random.random())

    def _all_down(self) -> bool:
        return all(s.failures > self.retries and not s.verified for s in self.servers)

    def _ready(self, srv: _Server) -> bool:
        """Wait out a cool-down; then one worker re-checks /health. True when the server may take work."""
        with srv.lock:
            if srv.failures == 0 or srv.verified:
                return True
            wait = srv.cool_until - time.monotonic()
            if wait <= 0 and not srv.checking:
                srv.checking = True
                check = True
            else:
                check = False
        if not check:
            self._closed.wait(min(max(wait, 0.01), 0.2))
            return False
        try:
            r = srv.client.get(
                "/health",
                timeout=httpx.Timeout(min(10.0, self.timeout), connect=min(CONNECT_TIMEOUT, self.timeout)),
            )
            alive = r.status_code in (200, 404)
        except httpx.HTTPError:
            alive = False
        with srv.lock:
            srv.checking = False
            if alive:
                srv.verified = True  # half-open: the next request decides; failures reset on success
                return True
        self._fault(srv)
        return False

    def _fail_all_queued(self) -> None:
        errors = "; ".join(f"{s.url}: {s.failures} faults in a row" for s in self.servers)
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if not job.future.done():
                job.future.set_exception(
                    ServerUnreachable(
                        f"every server failed repeatedly ({errors}); "
                        f"last errors: {' | '.join(job.errors[-2:])}",
                        f"check the servers: {'; '.join(curl_hint(s.url) for s in self.servers)}",
                    )
                )

    def _work(self, srv: _Server) -> None:
        while not self._closed.is_set():
            if self._all_down():
                self._fail_all_queued()
            if not self._ready(srv):
                continue
            try:
                job = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if job.future.done():
                continue
            if job.group is not None and job.group.error is not None:
                job.future.set_exception(job.group.error)
                continue
            with srv.lock:
                cooling = srv.failures > 0 and not srv.verified
            if cooling:  # another worker of this server just failed: leave the job to others
                self._queue.put(job)
                continue
            job.attempts += 1
            start = time.monotonic()
            try:
                text, finish, usage = _post_chat(srv.client, job.body, self.model)
            except ServerRejected as exc:
                with srv.lock:
                    srv.failures = 0
                job.future.set_exception(exc)
            except _Retryable as exc:
                job.errors.append(str(exc))
                self._fault(srv)
                if job.attempts > self.retries:
                    job.future.set_exception(
                        ServerUnreachable(
                            f"request failed {job.attempts} times: {' | '.join(job.errors[-3:])}",
                            f"check the server(s): {'; '.join(curl_hint(s.url) for s in self.servers)}; "
                            "raise --request-timeout for slow pages",
                        )
                    )
                else:
                    self._queue.put(job)
            except Exception as exc:  # a bug must not leave a caller waiting forever
                job.future.set_exception(exc)
            else:
                with srv.lock:
                    srv.failures = 0
                    srv.done += 1
                job.future.set_result(
                    Completion(text, finish, srv.url, time.monotonic() - start, job.attempts, usage)
                )
