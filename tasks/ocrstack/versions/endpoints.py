"""Serve defaults shared by every verb (serve, wait-ready, parse, verify, bench, api): one place.

Read from ``envs/versions.yaml`` (``serve.port``, ``serve.served-model-name``), where the guide's
values are pinned: guide 4.1 starts the server on port 18499 with ``--served-model-name minicpm-ocr``,
and parse must send that same served model name in every request.
"""

from __future__ import annotations

from ocrstack import versions


def default_port() -> int:
    """The serve port from versions.yaml (guide 4.1: 18499)."""
    return int(versions.pin("serve.port"))


def default_server_url() -> str:
    """``http://127.0.0.1:<serve.port>``: servers bind loopback unless told otherwise (guide 4.1)."""
    return f"http://127.0.0.1:{default_port()}"


def default_model() -> str:
    """The served model name shared by serve and parse (guide 4.1: ``minicpm-ocr``)."""
    return str(versions.pin("serve.served-model-name"))
