"""The ``openai`` recognizer against real HTTP servers on 127.0.0.1 (ocrstack.testing.fake_openai).

Covers request shape (crop as PNG data URL, per-category prompt, enable_thinking off, greedy),
the recognizer's probe before the first page, fault handling (4xx never retried; 5xx, timeouts
and refused connections open the server's breaker and are retried; a block that keeps failing is
marked failed; the run gives up after --progress-timeout without answers) and several servers
(spread, bounded concurrency, dead or slow server not stalling). The client alone: tests/client/;
bursts, poison blocks, restarts and routing: tests/client/test_faults.py, test_routing.py.
"""

from __future__ import annotations

import base64
import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from PIL import Image

from ocrstack.core.errors import ServerRejected, ServerUnreachable
from ocrstack.parsing.options import OpenAIOptions, ParseOptions
from ocrstack.parsing.recognition import create as create_recognizer
from ocrstack.parsing.recognition.openai.recognizer import OpenAIRecognizer, crop_box
from ocrstack.parsing.types import Block, Category, PageImage
from ocrstack.serving.process import free_port  # a port nothing listens on (bound, then closed)
from ocrstack.testing.fake_openai import FakeOpenAIServer


def page(w: int = 400, h: int = 300) -> PageImage:
    return PageImage(
        source="mem.png", index=0, image=Image.new("RGB", (w, h), "white"), dpi=None, source_sha256="0" * 64
    )


def recognizer(*urls: str, **kw) -> OpenAIRecognizer:
    """An openai recognizer with short timeouts/backoff for tests; ``kw`` overrides options."""
    base = dict(
        model="minicpm-ocr",
        prompts="minicpm-ocr",
        concurrency=2,
        request_timeout=10.0,
        retries=2,
        ready_timeout=0.0,
        progress_timeout=5.0,
    )
    base.update(kw)
    return OpenAIRecognizer(
        OpenAIOptions(server_urls=tuple(urls), **base), probe_timeout=5.0, backoff_base=0.02
    )


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


# ------------------------------------------------------------------ request shape


@pytest.mark.server
def test_blocks_become_one_request_each_with_crop_and_category_prompt(server: FakeOpenAIServer) -> None:
    blocks = [
        Block(bbox=(10.4, 20.6, 50.2, 60.0), category=Category.TEXT),
        Block(bbox=(0, 100, 400, 300), category=Category.TABLE),
        Block(bbox=(5, 5, 25, 25), category=Category.FIGURE),
    ]
    with recognizer(server.url) as rec:
        out = rec.recognize(page(), blocks)
    assert out is blocks
    chats = server.requests[1:]  # [0] is the probe's tiny request
    assert len(chats) == 2  # the figure is not sent
    sizes = sorted(r.image_size for r in chats)
    # bbox rounded outward: x 10..51, y 20..60 -> 41x40; table 400x200
    assert sizes == [(41, 40), (400, 200)]
    assert blocks[0].text == "[41x40] 请识别图中的文字"
    assert blocks[1].text == "[400x200] 请识别图中的表格并输出 OTSL"
    assert blocks[2].text == ""
    for r in chats:
        body = r.body
        assert body["model"] == "minicpm-ocr"
        assert body["chat_template_kwargs"] == {"enable_thinking": False}  # guide 5
        assert body["temperature"] == 0  # greedy
        content = body["messages"][-1]["content"]
        assert content[0]["type"] == "image_url"
        assert content[0]["image_url"]["url"].startswith("data:image/png;base64,")
        data = base64.b64decode(content[0]["image_url"]["url"].split(",", 1)[1])
        assert Image.open(io.BytesIO(data)).size == r.image_size
        assert content[1]["type"] == "text"
        assert "Authorization" not in r.headers


@pytest.mark.server
def test_mineru_set_sends_system_message_and_task_prompt(server: FakeOpenAIServer) -> None:
    with recognizer(server.url, prompts="mineru-diffusion") as rec:
        rec.recognize(page(), [Block(bbox=(0, 0, 100, 50), category=Category.FORMULA)])
    body = server.requests[-1].body
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful assistant."}
    assert body["messages"][1]["content"][1]["text"] == "\nFormula Recognition:"


def test_create_from_parse_options_uses_prompts_and_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-123")
    rec = create_recognizer(
        "openai", ParseOptions(inputs=(), prompts="mineru-diffusion", server_urls=("http://127.0.0.1:9",))
    )
    assert rec.prompt_set.name == "mineru-diffusion"
    assert rec.settings.api_key == "sk-from-env-123"
    assert "sk-from-env-123" not in repr(rec)
    opts = ParseOptions(inputs=(), api_key="sk-flag-456", server_urls=("http://127.0.0.1:9",))
    assert create_recognizer("openai", opts).settings.api_key == "sk-flag-456"  # --api-key wins over env
    assert "sk-flag-456" not in repr(opts)


@pytest.mark.server
def test_bbox_outside_page_is_a_warning_not_a_request(server: FakeOpenAIServer) -> None:
    assert crop_box((500, 10, 600, 20), (400, 300)) is None
    assert crop_box((-5.5, -1, 10.2, 3.1), (400, 300)) == (0, 0, 11, 4)
    b = Block(bbox=(500, 10, 600, 20), category=Category.TEXT)
    with recognizer(server.url) as rec:
        rec.recognize(page(), [b])
    assert len(server.requests) == 1  # probe only
    assert "outside" in b.warnings[0]


@pytest.mark.server
@pytest.mark.parametrize(
    ("reply", "finish", "text", "warning"),
    [
        ("<think>hmm</think>\nHello", "stop", "Hello", "enable_thinking"),
        ("   ", "stop", "", "empty output"),
        ("cut", "length", "cut", "max_tokens"),
    ],
)
def test_output_warnings(reply: str, finish: str, text: str, warning: str) -> None:
    with FakeOpenAIServer(reply=lambda body, size: reply, finish_reason=finish) as srv:
        b = Block(bbox=(0, 0, 10, 10), category=Category.TEXT)
        with recognizer(srv.url) as rec:
            rec.recognize(page(), [b])
    assert b.text == text
    assert any(warning in w for w in b.warnings), b.warnings


@pytest.mark.server
def test_api_key_is_sent_as_bearer_and_never_shown(capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-secret-do-not-log-42"
    with FakeOpenAIServer() as srv:
        rec = recognizer(srv.url, api_key=key)
        with rec:
            rec.recognize(page(), [Block(bbox=(0, 0, 10, 10), category=Category.TEXT)])
            assert all(r.headers.get("Authorization") == f"Bearer {key}" for r in srv.requests)
            srv.config.status = 401
            with pytest.raises(ServerRejected) as err:
                rec.recognize(page(), [Block(bbox=(0, 0, 10, 10), category=Category.TEXT)])
        assert "OPENAI_API_KEY" in str(err.value)
        shown = repr(rec) + repr(rec.settings) + str(err.value) + repr(rec._dispatcher) + str(rec.describe())
        out = capsys.readouterr()
    assert key not in shown + out.out + out.err


def test_recognizer_probes_before_first_page_and_fails_fast() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    rec = recognizer(url, request_timeout=1800)
    with pytest.raises(ServerUnreachable, match="curl --noproxy") as err:
        rec.recognize(page(), [Block(bbox=(0, 0, 10, 10), category=Category.TEXT)])
    assert "--ready-timeout" in str(err.value)  # the probe's error: no block request waited 1800 s


# ------------------------------------------------------------------ faults


@pytest.mark.server
def test_4xx_during_run_is_raised_at_once_and_never_retried(server: FakeOpenAIServer) -> None:
    with recognizer(server.url, retries=5) as rec:
        rec.start()
        server.config.status = 400
        server.config.error_message = "Request contains too many images"
        with pytest.raises(ServerRejected, match="too many images") as err:
            rec.recognize(page(), [Block(bbox=(0, 0, 10, 10), category=Category.TEXT)])
    assert server.chat_count == 2  # probe + exactly one attempt
    assert "--limit-mm-per-prompt" in str(err.value)


@pytest.mark.server
def test_4xx_cancels_the_rest_of_the_page(server: FakeOpenAIServer) -> None:
    blocks = [Block(bbox=(0, 0, 10 + i, 10), category=Category.TEXT) for i in range(30)]
    with recognizer(server.url, concurrency=1) as rec:
        rec.start()
        server.config.status = 400
        with pytest.raises(ServerRejected):
            rec.recognize(page(), blocks)
    assert server.chat_count < 1 + 5  # the unsent blocks of the page were not sent


@pytest.mark.server
def test_5xx_is_retried_then_succeeds(server: FakeOpenAIServer) -> None:
    with recognizer(server.url, retries=3) as rec:
        rec.start()
        server.config.fail_first = server.chat_count + 2  # next two answers are 503
        b = Block(bbox=(0, 0, 10, 10), category=Category.TEXT)
        rec.recognize(page(), [b])
        stats = rec.stats()[server.url]
    assert b.text.startswith("[10x10]") and b.error is None
    # probe, the block (503: breaker opens), a 1-token re-check (503), a re-check (ok), the block
    assert server.chat_count == 1 + 4
    assert stats["bursts"] == 1  # one counted fault, not two


@pytest.mark.server
def test_server_that_always_fails_gives_up_after_the_progress_timeout(server: FakeOpenAIServer) -> None:
    with recognizer(server.url, retries=2, progress_timeout=1.5) as rec:
        rec.start()
        server.config.fail_first = 10**6
        start = time.monotonic()
        with pytest.raises(ServerUnreachable, match="no server answered") as err:
            rec.recognize(page(), [Block(bbox=(0, 0, 10, 10), category=Category.TEXT)])
        elapsed = time.monotonic() - start
    assert elapsed >= 1.5  # the budget, not "N faults in a row"
    assert "no server answered any request for 1.5 s" in str(err.value)
    assert "curl --noproxy 127.0.0.1" in str(err.value) and "--progress-timeout" in str(err.value)


@pytest.mark.server
def test_dropped_connection_is_retried(server: FakeOpenAIServer) -> None:
    with recognizer(server.url, retries=2) as rec:
        rec.start()
        server.config.drop_first = server.chat_count + 1
        b = Block(bbox=(0, 0, 10, 10), category=Category.TEXT)
        rec.recognize(page(), [b])
    assert b.text.startswith("[10x10]")


@pytest.mark.server
def test_timeout_is_retried_and_bounded() -> None:
    with (
        FakeOpenAIServer() as srv,
        recognizer(srv.url, request_timeout=0.3, retries=1) as rec,
    ):
        rec.start()
        srv.config.latency = 2
        srv.config.probe_latency = 0.0  # the server answers its 1-token re-checks: only the block is slow
        b = Block(bbox=(0, 0, 10, 10), category=Category.TEXT)
        rec.recognize(page(), [b])  # without the bound both tries would answer after 2 s
        assert b.error is not None and "timed out" in b.error and b.text == ""
        assert srv.chat_count == 1 + 2 + 1  # probe, 2 tries of the block, 1 re-check between them


# ------------------------------------------------------------------ several servers


def _max_overlap(records) -> int:
    events = sorted(
        [(r.started, 1) for r in records] + [(r.finished, -1) for r in records], key=lambda e: (e[0], e[1])
    )
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


@pytest.mark.server
def test_requests_spread_over_servers_with_bounded_concurrency() -> None:
    with FakeOpenAIServer(latency=0.1) as a, FakeOpenAIServer(latency=0.1) as b:
        blocks = [Block(bbox=(0, 0, 10 + i, 10), category=Category.TEXT) for i in range(24)]
        with recognizer(a.url, b.url, concurrency=2) as rec:
            rec.recognize(page(), blocks)
        assert all(bl.text.startswith(f"[{10 + i}x10]") for i, bl in enumerate(blocks))
        for srv in (a, b):
            work = srv.requests[1:]
            assert len(work) >= 4, "both servers take work"
            assert _max_overlap(work) <= 2, "at most --concurrency requests in flight per server"
        assert len(a.requests) + len(b.requests) - 2 == 24


@pytest.mark.server
def test_dead_server_does_not_stall_the_others(capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with FakeOpenAIServer(latency=0.02) as live:
        blocks = [Block(bbox=(0, 0, 10, 10), category=Category.TEXT) for _ in range(12)]
        with recognizer(dead, live.url, concurrency=2, retries=1) as rec:
            rec.recognize(page(), blocks)
            sent_to_dead = rec.stats()[dead]["sent"]
        assert all(b.text for b in blocks)
        assert len(live.requests) == 1 + 12
    assert sent_to_dead == 0  # out of the rotation from its failed probe: no block waited on it
    assert dead in capsys.readouterr().err  # the dead server was reported


@pytest.mark.server
def test_server_dying_mid_run_is_rerouted() -> None:
    with FakeOpenAIServer(latency=0.05) as b:
        a = FakeOpenAIServer(latency=0.05).start()
        rec = recognizer(a.url, b.url, concurrency=2, retries=2)
        try:
            rec.start()
            a.stop()  # dies after the probe: its connections are refused from now on
            blocks = [Block(bbox=(0, 0, 10, 10), category=Category.TEXT) for _ in range(10)]
            rec.recognize(page(), blocks)
        finally:
            rec.close()
        assert all(bl.text for bl in blocks)
        assert len(b.requests) - 1 >= 10 - 2  # nearly everything went to the live server


@pytest.mark.server
def test_slow_server_takes_fewer_jobs_and_does_not_stall_the_fast_one() -> None:
    with FakeOpenAIServer(latency=1.0, max_concurrent=1) as slow, FakeOpenAIServer(latency=0.01) as fast:
        rec = recognizer(slow.url, fast.url, concurrency=1)
        pages = [[Block(bbox=(0, 0, 10, 10), category=Category.TEXT)] for _ in range(20)]
        with rec, ThreadPoolExecutor(8) as pool:
            rec.start()
            list(pool.map(lambda bl: rec.recognize(page(), bl), pages))
        assert all(bl[0].text for bl in pages)
        assert len(slow.requests) - 1 <= 3
        assert len(fast.requests) - 1 >= 17


@pytest.mark.server
def test_all_servers_down_mid_run_fails_in_bounded_time() -> None:
    a, b = FakeOpenAIServer().start(), FakeOpenAIServer().start()
    rec = recognizer(a.url, b.url, retries=1, progress_timeout=2.0)
    try:
        rec.start()
        a.stop()
        b.stop()
        with pytest.raises(ServerUnreachable, match="no server answered any request for 2 s"):
            rec.recognize(page(), [Block(bbox=(0, 0, 10, 10), category=Category.TEXT) for _ in range(4)])
    finally:
        rec.close()


@pytest.mark.server
def test_recognize_is_thread_safe(server: FakeOpenAIServer) -> None:
    rec = recognizer(server.url, concurrency=3)
    pages = [[Block(bbox=(0, 0, 5 + i, 5 + j), category=Category.TEXT) for j in range(3)] for i in range(10)]
    errors: list[BaseException] = []

    def run(bl):
        try:
            rec.recognize(page(), bl)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(bl,)) for bl in pages]
    with rec:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    for i, bl in enumerate(pages):
        for j, b in enumerate(bl):
            assert b.text.startswith(f"[{5 + i}x{5 + j}]")


# ------------------------------------------------------------------ through `ocrstack parse`


def _parse_cli(tmp_path, url: str, *extra: str) -> int:
    from ocrstack.bench import make_pdf
    from ocrstack.cli import main

    pdf = make_pdf(tmp_path / "doc.pdf", 2, lines=3)
    # --text-layer off: the generated PDF has a sound text layer, which auto would use instead
    args = ["parse", str(pdf), "--recognizer", "openai", "--layout", "none", "--server-url", url]
    args += ["--text-layer", "off"]
    return main([*args, *extra, "-o", str(tmp_path / "out")])


@pytest.mark.server
def test_parse_cli_through_openai_recognizer(tmp_path, server: FakeOpenAIServer) -> None:
    assert _parse_cli(tmp_path, server.url) == 0
    md = (tmp_path / "out" / "doc.md").read_text(encoding="utf-8")
    assert md.count("请识别图中的文字") == 2  # one whole-page request per page


def test_parse_cli_unreachable_server_exits_5_in_seconds(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert _parse_cli(tmp_path, url, "--ready-timeout", "1") == 5
    err = capsys.readouterr().err
    assert f"curl --noproxy 127.0.0.1 {url}/v1/models" in err and "--ready-timeout" in err


@pytest.mark.server
def test_parse_cli_rejection_exits_6(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(status=400) as srv:
        assert _parse_cli(tmp_path, srv.url) == 6
        assert srv.chat_count == 1
    assert "--trust-request-mm-kwargs" in capsys.readouterr().err
