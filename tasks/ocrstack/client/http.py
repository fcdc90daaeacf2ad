"""Server URLs and HTTP clients for OpenAI-compatible servers (guide 4.4, 8).

* :func:`base_url` normalises ``http://h:p/v1/`` to ``http://h:p``.
* :func:`make_client` gives an :class:`httpx.Client` whose connect timeout is short (an
  absent server fails in seconds, not after the read timeout) and which ignores
  environment proxies for loopback hosts (guide 8: ``no_proxy=127.0.0.1``).
* :func:`curl_hint` is the guide 4.4 check printed in every "cannot reach" error.

API keys only travel in the ``Authorization`` header; they are never part of an error
message, a log line or a ``repr``.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import httpx

from ocrstack.client import deadline
from ocrstack.core.errors import UsageError

CHAT_PATH = "/v1/chat/completions"
#: Seconds to wait for a TCP connection: an absent server fails in seconds, not after the read timeout.
CONNECT_TIMEOUT = 5.0
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


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


def public_url(url: str) -> str:
    """``url`` without user and password (``http://u:p@h:1/v1`` -> ``http://h:1/v1``): the form every
    message, log line, metric label and output file shows (issue 25 item 7: a credential in
    ``--server-url`` reached ``/metrics``, answers, logs and blocks.json). Requests still use
    the URL as given."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return urlunsplit(parts._replace(netloc=host + (f":{parts.port}" if parts.port else "")))


def curl_hint(url: str) -> str:
    """The guide 4.4 check for ``url``: ``curl --noproxy 127.0.0.1 URL/v1/models`` (no credentials)."""
    return f"curl --noproxy 127.0.0.1 {public_url(base_url(url))}/v1/models"


def short_timeout(timeout: float, cap: float = 10.0) -> httpx.Timeout:
    """Timeout for a small check (``/health``, ``/v1/models``): ``min(cap, timeout)`` s to read,
    ``min(CONNECT_TIMEOUT, timeout)`` s to connect."""
    return httpx.Timeout(min(cap, timeout), connect=min(CONNECT_TIMEOUT, timeout))


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
    Its sockets obey :mod:`ocrstack.client.deadline` (a request's whole-request deadline and abort).
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    client = httpx.Client(
        base_url=base_url(url),
        timeout=httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout)),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        headers=headers,
        trust_env=host not in LOOPBACK,
        verify=parts.scheme == "https",
    )
    return deadline.guard(client)  # ``timeout`` is a deadline for a whole request (issue 25 item 4)
