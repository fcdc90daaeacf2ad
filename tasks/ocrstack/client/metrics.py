"""``/metrics`` scraping and the DSpark proof (guide 6), shared by ``serve`` and ``verify``.

Speculative decoding is active only if its counters exist and grow.

"服务能响应不代表 DSpark 生效" (guide 6): a server that answers is no proof. This module
scrapes vLLM's Prometheus ``/metrics`` before and after a few real requests, parses it with
``prometheus_client.parser.text_string_to_metric_families`` and computes, from the deltas
summed over every ``engine`` label (and over ``model_name``, or only the one asked for):

* mean acceptance length = 1 + accepted / drafts (guide 6; vLLM ``SpecDecodingLogging``),
* per-position acceptance rate = accepted_per_pos[i] / drafts,
* draft acceptance rate = accepted / draft_tokens.

Counter names and the expected length range are data (``serve_profiles.yaml``
``dspark-check``). vLLM exposes counters with ``_total`` and ``model_name``/``engine``
labels; the per-position counter also has ``position``
(https://github.com/vllm-project/vllm/blob/main/vllm/v1/spec_decode/metrics.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from ocrstack.backends import profiles
from ocrstack.backends.profiles import DsparkCheck
from ocrstack.client.body import chat_body, png_data_url
from ocrstack.client.chat import chat_once
from ocrstack.core.errors import ConfigError, InputError, ServerUnreachable
from ocrstack.core.results import Check, Report, Status


def load_config(path: Path | None = None) -> DsparkCheck:
    """The ``dspark-check`` of a profiles file (default: the packaged ``serve_profiles.yaml``).

    Raises:
        ConfigError: the file is invalid (see :func:`ocrstack.backends.profiles.load`) or has
            no ``dspark-check``.
    """
    pset = profiles.load(path)
    if pset.dspark_check is None:
        raise ConfigError(f"{pset.path}: no 'dspark-check'", "add it (format in the file's header comment)")
    return pset.dspark_check


@dataclass
class SpecCounters:
    """Spec-decode counter values from one scrape, summed over engines (None = series absent).

    Attributes:
        accepted, drafts, draft_tokens: totals.
        per_position: ``{position: accepted tokens}``.
        engines, model_names: label values seen on these series.
    """

    accepted: float | None = None
    drafts: float | None = None
    draft_tokens: float | None = None
    per_position: dict[int, float] = field(default_factory=dict)
    engines: set[str] = field(default_factory=set)
    model_names: set[str] = field(default_factory=set)

    @property
    def present(self) -> bool:
        """True when both counters guide 6 names (accepted tokens, drafts) are exposed."""
        return self.accepted is not None and self.drafts is not None


def parse(text: str, model_name: str | None = None, config: DsparkCheck | None = None) -> SpecCounters:
    """Parse Prometheus exposition ``text`` into :class:`SpecCounters`.

    Only ``<name>_total`` samples count (``_created`` timestamps are ignored). Values of
    every label set are summed (one per engine); ``model_name`` restricts to that label.

    Raises:
        InputError: ``text`` is not valid exposition format.
    """
    cfg = config or load_config()
    out = SpecCounters()
    scalar = {cfg.accepted: "accepted", cfg.drafts: "drafts", cfg.draft_tokens: "draft_tokens"}
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as exc:
        raise InputError(
            f"/metrics text is not Prometheus exposition format ({exc})",
            "scrape a vLLM server's /metrics endpoint",
        ) from exc
    for fam in families:
        for s in fam.samples:
            if not s.name.endswith("_total"):
                continue
            base = s.name[: -len("_total")]
            if base not in scalar and base != cfg.per_position:
                continue
            if model_name is not None and s.labels.get("model_name") not in (None, model_name):
                continue
            if "engine" in s.labels:
                out.engines.add(s.labels["engine"])
            if "model_name" in s.labels:
                out.model_names.add(s.labels["model_name"])
            if base == cfg.per_position:
                pos = int(s.labels.get("position", "0"))
                out.per_position[pos] = out.per_position.get(pos, 0.0) + float(s.value)
            else:
                attr = scalar[base]
                setattr(out, attr, (getattr(out, attr) or 0.0) + float(s.value))
    return out


@dataclass
class SpecDelta:
    """Growth between two scrapes and the derived figures (None when drafts did not grow)."""

    accepted: float
    drafts: float
    draft_tokens: float | None
    per_position: dict[int, float]

    @property
    def mean_acceptance_length(self) -> float | None:
        """1 + accepted / drafts (guide 6), None when no drafts."""
        return 1.0 + self.accepted / self.drafts if self.drafts > 0 else None

    @property
    def per_position_rates(self) -> dict[int, float]:
        """``{position: accepted_at_position / drafts}``; empty when no drafts."""
        if self.drafts <= 0:
            return {}
        return {p: v / self.drafts for p, v in sorted(self.per_position.items())}

    @property
    def draft_acceptance_rate(self) -> float | None:
        """accepted / draft tokens, None when unknown."""
        return self.accepted / self.draft_tokens if self.draft_tokens else None


def delta(before: SpecCounters, after: SpecCounters) -> SpecDelta:
    """``after - before`` of each counter (absent in ``before`` counts as 0)."""
    dt = None if after.draft_tokens is None else after.draft_tokens - (before.draft_tokens or 0.0)
    pos = {p: v - before.per_position.get(p, 0.0) for p, v in after.per_position.items()}
    return SpecDelta(
        (after.accepted or 0.0) - (before.accepted or 0.0),
        (after.drafts or 0.0) - (before.drafts or 0.0),
        dt,
        pos,
    )


def check(
    before_text: str, after_text: str, model_name: str | None = None, config: DsparkCheck | None = None
) -> Report:
    """Judge two ``/metrics`` scrapes taken before and after some real requests (guide 6).

    Checks: ``spec-decode-counters`` (fail "server started without --speculative-config"
    when absent), ``spec-decode-steps`` (fail "no speculative steps" when drafts did not
    grow), ``acceptance-length`` (warn outside the guide's observed range, 5.2-7.0),
    ``per-position-acceptance`` (rates, informational).
    """
    cfg = config or load_config()
    rep = Report("DSpark speculative decoding (guide 6)")
    b, a = parse(before_text, model_name, cfg), parse(after_text, model_name, cfg)
    if not a.present:
        rep.add(
            Check(
                "spec-decode-counters",
                Status.FAIL,
                f"server started without --speculative-config: no {cfg.accepted}_total / "
                f"{cfg.drafts}_total in /metrics",
                'start the dspark profile (guide 4.1: --speculative-config \'{"method":"dspark",...}\')',
            )
        )
        for name in ("spec-decode-steps", "acceptance-length", "per-position-acceptance"):
            rep.add(Check(name, Status.NOT_RUN, "counters absent"))
        return rep
    rep.add(
        Check(
            "spec-decode-counters",
            Status.PASS,
            f"{cfg.accepted}_total and {cfg.drafts}_total present "
            f"(engines {sorted(a.engines) or ['-']}, model_name {sorted(a.model_names) or ['-']})",
        )
    )
    d = delta(b, a)
    if d.drafts <= 0:
        rep.add(
            Check(
                "spec-decode-steps",
                Status.FAIL,
                f"no speculative steps: {cfg.drafts}_total did not grow ({b.drafts} -> {a.drafts})",
                "send real requests between the two scrapes; if they ran, DSpark is not drafting "
                "(check the draft model path and the server log)",
            )
        )
        for name in ("acceptance-length", "per-position-acceptance"):
            rep.add(Check(name, Status.NOT_RUN, "no speculative steps"))
        return rep
    rep.add(
        Check(
            "spec-decode-steps",
            Status.PASS,
            f"{d.drafts:.0f} drafts, {d.accepted:.0f} accepted tokens"
            + (f", draft acceptance rate {d.draft_acceptance_rate:.3f}" if d.draft_acceptance_rate else ""),
        )
    )
    mal = d.mean_acceptance_length
    assert mal is not None
    in_range = cfg.low <= mal <= cfg.high
    rep.add(
        Check(
            "acceptance-length",
            Status.PASS if in_range else Status.WARN,
            f"mean acceptance length {mal:.2f} = 1 + {d.accepted:.0f}/{d.drafts:.0f}",
            ""
            if in_range
            else f"outside {cfg.low}-{cfg.high} seen in the guide's environment (guide 6): "
            "check the main and draft checkpoints come from the same release (guide 3.4)",
            expected=f"{cfg.low}-{cfg.high}",
            found=f"{mal:.2f}",
        )
    )
    rates = d.per_position_rates
    rep.add(
        Check(
            "per-position-acceptance",
            Status.PASS if rates else Status.NOT_RUN,
            ", ".join(f"{p}:{r:.3f}" for p, r in rates.items())
            if rates
            else f"no {cfg.per_position}_total series",
        )
    )
    return rep


# --------------------------------------------------------------------------- live server


SCRAPE_HINT = "start the server, or check the server URL given for the DSpark check"


def scrape(url: str, timeout: float = 10.0, hint: str = SCRAPE_HINT) -> str:
    """GET ``<url>/metrics`` and return the text.

    ``hint`` is the remedy shown when the server cannot be reached (callers name their own
    option for the address, e.g. ``serve dspark-check URL`` or ``--port``).

    Raises:
        ServerUnreachable: connection failure or a non-200 answer (404: no /metrics endpoint,
            e.g. ``transformers serve``).
    """
    import httpx

    target = url.rstrip("/").removesuffix("/v1") + "/metrics"
    try:
        r = httpx.get(target, timeout=timeout, trust_env=False)
    except httpx.HTTPError as exc:
        raise ServerUnreachable(f"cannot scrape {target} ({exc})", hint) from exc
    if r.status_code != 200:
        raise ServerUnreachable(
            f"{target} answered HTTP {r.status_code}; this server exposes no Prometheus metrics",
            "the DSpark check needs the vLLM dspark profile (guide 4.1, 6)",
        )
    return r.text


def text_page_png(lines: int = 12) -> str:
    """A white page with printed lines as a PNG data URL (a real OCR-like request body)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (640, 40 + 24 * lines), "white")
    draw = ImageDraw.Draw(img)
    for i in range(lines):
        draw.text(
            (20, 20 + 24 * i), f"{i + 1}. The quick brown fox jumps over the lazy dog {i * 7}", fill="black"
        )
    return png_data_url(img)


def send_requests(url: str, model: str, n: int = 3, max_tokens: int = 256, timeout: float = 600.0) -> int:
    """Send ``n`` real chat requests (image + OCR prompt); return the generated token count.

    Raises:
        ServerRejected: a 4xx answer; ServerUnreachable: connection failure or 5xx.
    """
    body = chat_body(model, "OCR the text in this image.", text_page_png(), max_tokens=max_tokens)
    total = 0
    for _ in range(n):
        total += int(chat_once(url, body, timeout=timeout).usage.get("completion_tokens") or 0)
    return total


def run_check(
    url: str,
    model: str,
    n_requests: int = 3,
    model_label: str | None = None,
    sender: Callable[[str, str, int], Any] | None = None,
    hint: str = SCRAPE_HINT,
) -> Report:
    """Scrape, send ``n_requests`` real requests, scrape again, and :func:`check` (guide 6).

    ``hint``: remedy when ``/metrics`` cannot be reached (see :func:`scrape`).
    """
    before = scrape(url, hint=hint)
    (sender or send_requests)(url, model, n_requests)
    after = scrape(url, hint=hint)
    return check(before, after, model_label)
