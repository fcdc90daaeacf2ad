"""DSpark proof (guide 6) against vLLM /metrics exposition fixtures (tests/data/metrics/README.md)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from ocrstack.client import metrics
from ocrstack.core.errors import InputError
from ocrstack.core.results import Status

DATA = Path(__file__).resolve().parents[1] / "data" / "metrics"


def fx(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def _sum_lines(text: str, sample: str) -> float:
    """Independent arithmetic on the raw text: sum every ``sample{...} value`` line."""
    pat = re.compile(rf"^{re.escape(sample)}\{{[^}}]*\}} ([0-9.e+]+)$", re.M)
    return sum(float(v) for v in pat.findall(text))


def by_name(report):
    return {c.name: c for c in report.checks}


def test_fixtures_are_what_the_generator_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("gen_metrics", DATA / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    monkeypatch.setattr(gen, "HERE", tmp_path)
    gen.main()
    for f in tmp_path.glob("*.prom"):
        assert f.read_text() == fx(f.name), f.name


def test_parse_sums_engines_and_positions() -> None:
    text = fx("dspark_after.prom")
    c = metrics.parse(text)
    assert c.engines == {"0", "1"} and c.model_names == {"minicpm-ocr"}
    assert c.drafts == _sum_lines(text, "vllm:spec_decode_num_drafts_total") == 350
    assert c.accepted == _sum_lines(text, "vllm:spec_decode_num_accepted_tokens_total")
    assert len(c.per_position) == 15  # num_speculative_tokens 15 (guide 4.1)
    pos0 = re.findall(
        r'^vllm:spec_decode_num_accepted_tokens_per_pos_total\{[^}]*position="0"\} (\S+)$', text, re.M
    )
    assert len(pos0) == 2 and c.per_position[0] == sum(float(v) for v in pos0)


def test_parse_filters_model_name() -> None:
    assert metrics.parse(fx("dspark_after.prom"), model_name="other").drafts is None


def test_created_series_are_ignored() -> None:
    text = (
        "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
        "# TYPE vllm:spec_decode_num_drafts_total counter\n"
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 7.0\n'
        'vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e+09\n'
    )
    assert metrics.parse(text).drafts == 7.0


def test_good_dspark_run_passes_with_length_in_range() -> None:
    before, after = fx("dspark_before.prom"), fx("dspark_after.prom")
    rep = metrics.check(before, after)
    assert rep.ok, rep.to_text()
    acc = _sum_lines(after, "vllm:spec_decode_num_accepted_tokens_total") - _sum_lines(
        before, "vllm:spec_decode_num_accepted_tokens_total"
    )
    drafts = _sum_lines(after, "vllm:spec_decode_num_drafts_total") - _sum_lines(
        before, "vllm:spec_decode_num_drafts_total"
    )
    want = 1 + acc / drafts
    checks = by_name(rep)
    assert checks["acceptance-length"].status is Status.PASS
    assert checks["acceptance-length"].found == f"{want:.2f}" == "6.46"
    rates = checks["per-position-acceptance"].detail.split(", ")
    assert len(rates) == 15 and rates[0].startswith("0:")
    first = [float(r.split(":")[1]) for r in rates]
    assert first == sorted(first, reverse=True)  # acceptance falls with draft position


def test_low_acceptance_is_flagged() -> None:
    rep = metrics.check(fx("dspark_before.prom"), fx("dspark_low_after.prom"))
    c = by_name(rep)["acceptance-length"]
    assert c.status is Status.WARN and c.found == "1.17" and "5.2-7.0" in c.fix


def test_server_without_speculative_config_fails() -> None:
    rep = metrics.check(fx("standard_no_spec.prom"), fx("standard_no_spec.prom"))
    assert not rep.ok
    c = by_name(rep)["spec-decode-counters"]
    assert c.status is Status.FAIL and "server started without --speculative-config" in c.detail
    assert by_name(rep)["acceptance-length"].status is Status.NOT_RUN


def test_no_growth_fails_with_no_speculative_steps() -> None:
    rep = metrics.check(fx("dspark_after.prom"), fx("dspark_after.prom"))
    c = by_name(rep)["spec-decode-steps"]
    assert c.status is Status.FAIL and "no speculative steps" in c.detail


def test_garbage_is_an_input_error() -> None:
    with pytest.raises(InputError):
        metrics.parse("this is {not prometheus")


def test_range_is_data() -> None:
    cfg = metrics.load_config()
    assert (cfg.low, cfg.high) == (5.2, 7.0)
    assert cfg.drafts == "vllm:spec_decode_num_drafts"


class _MetricsServer:
    """In-process HTTP server (a thread, no process): /metrics serves ``scrapes`` in turn;
    chat requests are counted. Mimics a vLLM DSpark server between two scrapes."""

    def __init__(self, scrapes: list[str]) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self
        self.scrapes = list(scrapes)
        self.chats: list[dict] = []

        class H(BaseHTTPRequestHandler):
            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                text = outer.scrapes.pop(0) if len(outer.scrapes) > 1 else outer.scrapes[0]
                self._send(200, text.encode(), "text/plain; version=0.0.4")

            def do_POST(self) -> None:
                import json

                outer.chats.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self._send(
                    200,
                    b'{"choices":[{"message":{"content":"x"}}],"usage":{"completion_tokens":9}}',
                    "application/json",
                )

            def log_message(self, *a) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *a) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.server
def test_run_check_scrapes_sends_real_requests_and_scrapes_again() -> None:
    with _MetricsServer([fx("dspark_before.prom"), fx("dspark_after.prom")]) as srv:
        rep = metrics.run_check(srv.url, "minicpm-ocr", n_requests=2)
    assert rep.ok, rep.to_text()
    assert len(srv.chats) == 2
    body = srv.chats[0]
    assert body["model"] == "minicpm-ocr" and body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["messages"][0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_cli_dspark_check_exit_codes(tmp_path: Path, capsys) -> None:
    from ocrstack import cli

    ok = cli.main(
        [
            "serve",
            "dspark-check",
            "--before",
            str(DATA / "dspark_before.prom"),
            "--after",
            str(DATA / "dspark_after.prom"),
        ]
    )
    assert ok == 0 and "mean acceptance length 6.46" in capsys.readouterr().out
    bad = cli.main(
        [
            "serve",
            "dspark-check",
            "--before",
            str(DATA / "standard_no_spec.prom"),
            "--after",
            str(DATA / "standard_no_spec.prom"),
        ]
    )
    assert bad == 1
    assert "server started without --speculative-config" in capsys.readouterr().err


def _port(url: str) -> str:
    return url.rsplit(":", 1)[1]


@pytest.mark.server
@pytest.mark.parametrize("where", ["serve-port", "check-port", "url"])
def test_cli_dspark_check_honours_port_and_url(tmp_path: Path, capsys, where: str) -> None:
    from ocrstack import cli

    with _MetricsServer([fx("dspark_before.prom"), fx("dspark_after.prom")]) as srv:
        port = _port(srv.url)
        argv = {
            "serve-port": ["serve", "--port", port, "--run-dir", str(tmp_path), "dspark-check"],
            "check-port": ["serve", "dspark-check", "--port", port],
            "url": ["serve", "dspark-check", srv.url],
        }[where]
        rc = cli.main([*argv, "--requests", "1"])
    assert rc == 0, capsys.readouterr().err
    assert "mean acceptance length 6.46" in capsys.readouterr().out
    assert len(srv.chats) == 1


@pytest.mark.server
def test_cli_dspark_check_takes_the_served_name_from_the_state_file(tmp_path: Path, capsys) -> None:
    import json

    from ocrstack import cli

    with _MetricsServer([fx("dspark_before.prom"), fx("dspark_after.prom")]) as srv:
        port = _port(srv.url)
        (tmp_path / f"serve-{port}.json").write_text(json.dumps({"served_model": "ocr-b", "url": srv.url}))
        argv = ["serve", "--port", port, "--run-dir", str(tmp_path), "dspark-check", "--requests", "1"]
        rc = cli.main(argv)
    assert rc == 0, capsys.readouterr().err
    assert srv.chats[0]["model"] == "ocr-b"


def test_cli_dspark_check_unreachable_names_options_it_has(capsys) -> None:
    from ocrstack import cli
    from ocrstack.core.errors import ServerUnreachable, UsageError
    from ocrstack.serving.process import free_port

    port = free_port()
    rc = cli.main(["serve", "dspark-check", "--port", str(port)])
    err = capsys.readouterr().err
    assert rc == ServerUnreachable.exit_code
    assert f"127.0.0.1:{port}/metrics" in err
    assert "--server-url" not in err  # dspark-check has no such option
    assert "dspark-check" in err and "--port" in err
    rc = cli.main(["serve", "dspark-check", "--port", str(port), f"http://127.0.0.1:{port + 1}"])
    assert rc == UsageError.exit_code and "port" in capsys.readouterr().err
