"""The shared client against real HTTP servers on 127.0.0.1: PNG encoding and the readiness probe.

Moved from tests/parsing/test_openai_recognizer.py (they test ``ocrstack.client``, not the recognizer).
"""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from ocrstack.client import png_data_url
from ocrstack.client.probe import probe
from ocrstack.core.errors import ServerRejected, ServerUnreachable
from ocrstack.serving.process import free_port  # a port nothing listens on (bound, then closed)
from ocrstack.testing.fake_openai import FakeOpenAIServer


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def _decode(url: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def test_grey_crop_is_sent_as_one_channel_with_identical_rgb_pixels() -> None:
    grey = Image.new("RGB", (40, 30), "white")
    grey.paste((90, 90, 90), (5, 5, 20, 20))
    sent = _decode(png_data_url(grey))
    assert sent.mode == "L"
    assert sent.convert("RGB").tobytes() == grey.tobytes()
    colour = grey.copy()
    colour.putpixel((1, 1), (255, 0, 0))
    sent = _decode(png_data_url(colour))
    assert sent.mode == "RGB" and sent.tobytes() == colour.tobytes()
    rgba = Image.new("RGBA", (4, 4), (10, 20, 30, 255))
    assert _decode(png_data_url(rgba)).convert("RGB").tobytes() == rgba.convert("RGB").tobytes()


@pytest.mark.server
def test_probe_passes_with_health_and_tiny_request(server: FakeOpenAIServer) -> None:
    result = probe(server.url + "/v1/", "minicpm-ocr", timeout=5)
    assert result.url == server.url and result.health == 200 and result.models == ("minicpm-ocr",)
    assert server.requests[0].image_size == (64, 64)  # a real image request, not only /v1/models
    assert server.requests[0].body["max_tokens"] == 1


def test_probe_refused_fails_fast_with_url_and_curl_hint() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerUnreachable, match="no server answers") as err:  # at connect, not after 600 s
        probe(url, "minicpm-ocr", timeout=600)
    assert url in str(err.value)
    assert f"curl --noproxy 127.0.0.1 {url}/v1/models" in str(err.value)
    assert err.value.exit_code == 5


@pytest.mark.server
def test_probe_does_not_trust_models_list_when_health_is_not_ready() -> None:
    with FakeOpenAIServer(health_status=503) as srv, pytest.raises(ServerUnreachable, match="not ready"):
        probe(srv.url, "minicpm-ocr", timeout=5)
    assert srv.chat_count == 0


@pytest.mark.server
def test_probe_accepts_server_without_health_route() -> None:
    with FakeOpenAIServer(health_status=404) as srv:
        assert probe(srv.url, "minicpm-ocr", timeout=5).health is None


@pytest.mark.server
def test_probe_catches_image_rejection_before_first_page() -> None:
    """guide 8: a 400 on every image request = server lacks --trust-request-mm-kwargs."""
    with FakeOpenAIServer(status=400, error_message="mm kwargs not allowed") as srv:
        with pytest.raises(ServerRejected) as err:
            probe(srv.url, "minicpm-ocr", timeout=5)
        assert srv.chat_count == 1  # not retried
    msg = str(err.value)
    assert "HTTP 400" in msg and "mm kwargs not allowed" in msg and "--trust-request-mm-kwargs" in msg
    assert "--limit-mm-per-prompt" in msg and err.value.exit_code == 6


@pytest.mark.server
def test_probe_pinned_model_says_fix_model() -> None:
    with FakeOpenAIServer(pinned_model="/models/MiniCPM-OCR-1.0") as srv:
        with pytest.raises(ServerRejected) as err:
            probe(srv.url, "minicpm-ocr", timeout=5)
    assert "Server is pinned to /models/MiniCPM-OCR-1.0" in str(err.value)
    assert "--model" in str(err.value)


@pytest.mark.server
def test_probe_timeout_is_unreachable() -> None:
    with FakeOpenAIServer(latency=3) as srv:
        with pytest.raises(ServerUnreachable, match="warming up"):  # without the timeout it would pass
            probe(srv.url, "minicpm-ocr", timeout=0.5)
