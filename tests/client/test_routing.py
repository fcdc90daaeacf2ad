"""Load-aware routing (issue 13 item 2): /metrics parsing, the wait score, capacity in the URL, and
the split of requests between fake servers on 127.0.0.1 (one reporting a long queue)."""

from __future__ import annotations

import pytest

from ocrstack.bench.faults import routing_split
from ocrstack.client import Dispatcher, chat_body, tiny_png
from ocrstack.client.routing import Load, parse_load, score, split_capacity
from ocrstack.core.errors import UsageError
from ocrstack.testing.fake_openai import FakeOpenAIServer
from support.wait import wait_until

# vLLM 0.1x /metrics excerpt (two data-parallel engines; format of vllm/v1/metrics/loggers.py), hand-copied
VLLM = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="minicpm-ocr"} 3.0
vllm:num_requests_running{engine="1",model_name="minicpm-ocr"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="minicpm-ocr"} 7.0
vllm:num_requests_waiting{engine="1",model_name="minicpm-ocr"} 1.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="minicpm-ocr"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="minicpm-ocr"} 0.5
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="minicpm-ocr"} 1234.0
"""

# SGLang /metrics excerpt (python/sglang/srt/metrics/collector.py names), hand-copied
SGLANG = """\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="mineru-diffusion"} 4.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="mineru-diffusion"} 9.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="mineru-diffusion"} 0.28
"""


def test_parse_load_vllm_sums_engines() -> None:
    load = parse_load(VLLM)
    assert load is not None
    assert (load.engine, load.running, load.waiting, load.cache) == ("vllm", 5.0, 8.0, 0.5)


def test_parse_load_sglang() -> None:
    load = parse_load(SGLANG)
    assert load is not None
    assert (load.engine, load.running, load.waiting, load.cache) == ("sglang", 4.0, 9.0, 0.28)


@pytest.mark.parametrize("text", ["", "not prometheus {{{", "# TYPE x gauge\nx 1\n", "<html>404</html>"])
def test_parse_load_without_queue_gauges_is_none(text: str) -> None:
    assert parse_load(text) is None


def test_score_is_expected_wait_in_service_times() -> None:
    assert score(None, own=0, capacity=4) == 0.25  # in-flight counting: (0 + 1) / 4
    assert score(None, own=3, capacity=4) == 1.0
    busy = Load("vllm", running=4, waiting=16, cache=0.1, own=2)  # 18 requests of other clients
    assert score(busy, own=2, capacity=4) == (18 + 2 + 1) / 4
    full = Load("vllm", running=0, waiting=0, cache=0.97)
    assert score(full, own=0, capacity=8) == 0.97  # a nearly full KV cache dominates


def test_capacity_in_the_url() -> None:
    assert split_capacity("http://127.0.0.1:18499#capacity=8") == ("http://127.0.0.1:18499", 8)
    assert split_capacity("http://127.0.0.1:18499/v1") == ("http://127.0.0.1:18499/v1", None)
    for bad in ("http://h:1#capacity=0", "http://h:1#cap=2", "http://h:1#capacity=x"):
        with pytest.raises(UsageError, match="capacity=N"):
            split_capacity(bad)


@pytest.mark.server
def test_the_loaded_server_receives_clearly_fewer_blocks() -> None:
    split = routing_split(blocks=60, extra_waiting=20, concurrency=4)
    print(f"routing split (idle / loaded with 20 queued): {split['idle']} / {split['loaded']}")
    assert split["modes"] == {"idle": "metrics", "loaded": "metrics"}
    assert split["idle"] + split["loaded"] == 60
    assert split["loaded"] <= 0.1 * 60  # in-flight counting alone gives it about 20 % here


@pytest.mark.server
def test_a_moderately_loaded_server_takes_what_its_room_allows() -> None:
    split = routing_split(blocks=60, extra_waiting=2, concurrency=4)
    print(f"routing split (idle / loaded with 2 queued): {split['idle']} / {split['loaded']}")
    assert 0 < split["loaded"] < split["idle"]


@pytest.mark.server
def test_both_metrics_missing_falls_back_to_inflight_counting() -> None:
    body = chat_body("minicpm-ocr", "OCR", tiny_png(), max_tokens=16)
    with (
        FakeOpenAIServer(latency=0.03) as a,
        FakeOpenAIServer(latency=0.03) as b,
        Dispatcher([a.url, b.url], model="minicpm-ocr", concurrency=2, metrics_interval=0.1) as d,
    ):
        scrapes = d._poller.scrapes  # the poller's count of finished scrapes per server
        wait_until(lambda: min(scrapes.values()) >= 1, "a /metrics scrape of each server (both 404)")
        assert d.load_mode(a.url) == d.load_mode(b.url) == "inflight"
        for f in [d.submit(body) for _ in range(40)]:
            f.result(timeout=30)
        assert d.stats()[a.url]["routing"] == "inflight"
        na, nb = len(a.requests), len(b.requests)
    assert na + nb == 40
    assert min(na, nb) >= 14  # equal servers share about evenly


@pytest.mark.server
def test_capacity_sets_the_in_flight_limit_of_that_server() -> None:
    body = chat_body("minicpm-ocr", "OCR", tiny_png(), max_tokens=16)
    with FakeOpenAIServer(latency=0.2) as srv:
        with Dispatcher(
            [f"{srv.url}#capacity=6"], model="minicpm-ocr", concurrency=2, routing_mode="inflight"
        ) as d:
            for f in [d.submit(body) for _ in range(12)]:
                f.result(timeout=30)
            assert d.stats()[srv.url]["capacity"] == 6
        starts = sorted(r.started for r in srv.requests)
    overlap = max(sum(1 for r in srv.requests if r.started <= t < r.finished) for t in starts)
    assert 4 < overlap <= 6  # more than --concurrency 2, never more than the capacity
