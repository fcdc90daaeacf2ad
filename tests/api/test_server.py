"""``ocrstack api serve`` refuses to listen beyond loopback without an API key."""

from __future__ import annotations

import pytest

from ocrstack.api.config import ServiceConfig
from ocrstack.api.server import serve
from ocrstack.cli import main
from ocrstack.core.errors import UsageError


def test_public_bind_needs_a_key(tmp_path) -> None:
    with pytest.raises(UsageError, match="without an API key"):
        serve(ServiceConfig(host="0.0.0.0", data_dir=tmp_path))


def test_bad_serve_flags_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["api", "serve", "--layout", "bogus"]) == 2
    assert "unknown layout kind 'bogus'" in capsys.readouterr().err
    assert main(["api", "serve", "--workers", "0"]) == 2
