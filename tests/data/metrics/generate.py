"""Regenerate the vLLM /metrics fixtures in this directory (see README.md).

The text is produced by prometheus_client itself with the counter definitions vLLM uses
(vllm/v1/spec_decode/metrics.py ``SpecDecodingProm``: names without ``_total``, which
prometheus_client appends; labels ``model_name`` and ``engine`` from vLLM's
``PrometheusStatLogger``, plus ``position`` on the per-position counter), so the files are
byte-for-byte what a vLLM server's ``/metrics`` serves for these values. ``_created``
series are disabled to keep the files deterministic.

    python tests/data/metrics/generate.py      # rewrites *.prom here
"""

from __future__ import annotations

from pathlib import Path

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

HERE = Path(__file__).resolve().parent
MODEL = "minicpm-ocr"
NUM_SPEC = 15  # guide 4.1: num_speculative_tokens 15


def render(spec: dict[str, dict[str, float]] | None, running: float = 0.0) -> str:
    """spec: {engine: {"drafts", "draft_tokens", "accepted", "pos0".."pos14"}} or None (no spec decoding)."""
    prometheus_client.disable_created_metrics()
    reg = CollectorRegistry()
    labels = ["model_name", "engine"]
    g = Gauge(
        "vllm:num_requests_running", "Number of requests in model execution batches.", labels, registry=reg
    )
    prompt = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", labels, registry=reg)
    gen = Counter("vllm:generation_tokens", "Number of generation tokens processed.", labels, registry=reg)
    engines = sorted(spec) if spec else ["0"]
    for e in engines:
        g.labels(MODEL, e).set(running)
        prompt.labels(MODEL, e).inc(2048.0 * (1 + int(e)))
        gen.labels(MODEL, e).inc(512.0 * (1 + int(e)))
    if spec:
        drafts = Counter(
            "vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", labels, registry=reg
        )
        dtok = Counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", labels, registry=reg)
        acc = Counter(
            "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", labels, registry=reg
        )
        pos = Counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            labels + ["position"],
            registry=reg,
        )
        for e, v in spec.items():
            drafts.labels(MODEL, e).inc(v["drafts"])
            dtok.labels(MODEL, e).inc(v["draft_tokens"])
            acc.labels(MODEL, e).inc(v["accepted"])
            for p in range(NUM_SPEC):
                pos.labels(MODEL, e, str(p)).inc(v[f"pos{p}"])
    return generate_latest(reg).decode()


def engine(drafts: int, per_pos: list[int]) -> dict[str, float]:
    """Counters of one engine: ``per_pos[i]`` drafts accepted at least i+1 tokens."""
    assert len(per_pos) == NUM_SPEC and all(a >= b for a, b in zip(per_pos, per_pos[1:], strict=False))
    v = {"drafts": drafts, "draft_tokens": drafts * NUM_SPEC, "accepted": sum(per_pos)}
    v.update({f"pos{i}": c for i, c in enumerate(per_pos)})
    return v


def main() -> None:
    before = {
        "0": engine(40, [36, 33, 30, 27, 25, 22, 20, 17, 14, 10, 8, 6, 4, 2, 1]),
        "1": engine(10, [9, 8, 8, 7, 6, 5, 4, 4, 3, 2, 2, 1, 1, 0, 0]),
    }
    # +200 drafts on engine 0 and +100 on engine 1; accepted 315 -> 1954 (+1639): length 1 + 1639/300 = 6.46
    good = {
        "0": engine(240, [210, 190, 170, 150, 130, 110, 90, 72, 56, 42, 30, 20, 12, 6, 3]),
        "1": engine(110, [100, 92, 84, 75, 66, 57, 48, 40, 32, 25, 18, 12, 8, 4, 2]),
    }
    # same drafts growth, accepted 315 -> 365 (+50): length 1 + 50/300 = 1.17 (flagged)
    low = {
        "0": engine(240, [120, 60, 35, 17, 7, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
        "1": engine(110, [61, 30, 18, 9, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    }
    files = {
        "dspark_before.prom": render(before),
        "dspark_after.prom": render(good, running=1.0),
        "dspark_low_after.prom": render(low),
        "standard_no_spec.prom": render(None),
    }
    for name, text in files.items():
        (HERE / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
