"""Form fields -> ParseOptions: the CLI's checks and messages, and what the API refuses."""

from __future__ import annotations

import pytest

from ocrstack.api import options as api_options
from ocrstack.cli import build_parser
from ocrstack.core.errors import UsageError
from ocrstack.parsing.options import ParseOptions

BASE = ParseOptions(inputs=(), server_urls=("http://127.0.0.1:9001",))


def cli_error(*flags: str) -> str:
    """The one-line message ``ocrstack parse x.pdf FLAGS`` gives (checked before any file is read)."""
    args = build_parser().parse_args(["parse", "x.pdf", *flags])
    with pytest.raises(UsageError) as info:
        args.handler(args)
    return info.value.render()


def api_error(**fields: str) -> str:
    with pytest.raises(UsageError) as info:
        api_options.from_form(fields, base=BASE, allowed_server_urls=BASE.server_urls)
    return info.value.render()


@pytest.mark.parametrize(
    ("flags", "fields"),
    [
        (["--concurrency", "0"], {"concurrency": "0"}),
        (["--max-pixels", "0"], {"max_pixels": "0"}),
        (["--max-tokens", "0"], {"max_tokens": "0"}),
        (["--retries", "-1"], {"retries": "-1"}),
    ],
)
def test_same_message_as_the_cli(flags: list[str], fields: dict[str, str]) -> None:
    assert api_error(**fields) == cli_error(*flags)


def test_unknown_kinds_worded_like_the_cli() -> None:
    assert api_error(layout="bogus") == cli_error("--layout", "bogus")
    assert api_error(recognizer="x") == cli_error("--recognizer", "x")
    assert api_error(dpi="abc") == cli_error("--dpi", "abc")


def test_values_are_converted_and_typed() -> None:
    opts = api_options.from_form(
        {"pages": "1-2", "dpi": "150", "keep_paratext": "true", "request_timeout": "2.5"},
        base=BASE,
        allowed_server_urls=BASE.server_urls,
    )
    assert (opts.pages, opts.dpi, opts.keep_paratext, opts.request_timeout) == ("1-2", 150, True, 2.5)
    assert "dpi" in api_error(dpi="abc") and "abc" in api_error(dpi="abc")
    assert "maybe" in api_error(keep_paratext="maybe")
    assert "unknown option 'dpii'" in api_error(dpii="1")


def test_no_server_side_urls_or_paths_from_requests() -> None:
    assert "not one of this service's recognizer servers" in api_error(server_urls="http://169.254.169.254")
    assert "not a built-in prompt set" in api_error(prompts="/etc/passwd")
    assert "not a built-in prompt set" in api_error(prompts="pyproject.toml")
    ok = api_options.from_form(
        {"server_urls": ["http://127.0.0.1:9001/"]}, base=BASE, allowed_server_urls=BASE.server_urls
    )
    assert ok.server_urls == ("http://127.0.0.1:9001",)


def test_json_round_trip_keeps_the_service_key_out() -> None:
    base = ParseOptions(inputs=(), api_key="secret")
    opts = api_options.from_form({"dpi": "120"}, base=base, allowed_server_urls=base.server_urls)
    stored = api_options.to_json(opts)
    assert "secret" not in repr(stored)
    back = api_options.from_json(stored, base)
    assert back.dpi == 120 and back.api_key == "secret"


def test_api_errors_name_form_fields_not_cli_flags() -> None:
    """The CLI's fix text says --text-layer; the HTTP answer says the form field (review finding)."""
    from ocrstack.api.schemas import api_wording

    assert api_wording("use --text-layer with one of: auto, on, off") == (
        "use form field text_layer with one of: auto, on, off"
    )
    assert api_wording("--timeout must be > 0") == "form field request_timeout must be > 0"
    assert api_wording("run ocrstack serve --profile x") == "run ocrstack serve --profile x"
    assert api_wording(None) is None
    # a flag of the service's own command line stays a flag (issue 24 item 8: it used to read
    # "start the service with form field server_urls")
    assert api_wording("add it: ocrstack api serve --server-url URL --dpi 300; or use --dpi 200") == (
        "add it: ocrstack api serve --server-url URL --dpi 300; or use form field dpi 200"
    )


def test_a_server_url_not_configured_names_the_operators_flag() -> None:
    with pytest.raises(UsageError) as info:
        api_options.from_form(
            {"server_urls": "http://10.0.0.9:8000"}, base=BASE, allowed_server_urls=BASE.server_urls
        )
    from ocrstack.api.schemas import api_wording

    fix = api_wording(info.value.remedy)
    assert fix.endswith("the operator adds servers with ocrstack api serve --server-url URL"), fix
    assert "form field" not in fix and "form field" not in api_wording(info.value.message)


def test_a_job_stored_before_the_declaration_still_loads() -> None:
    """Options JSON as the job store held it before the request fields were derived (16 fields,
    no ocr_runtime/routing/timeouts): the new fields take the service defaults."""
    stored = {
        "pages": "1-2",
        "dpi": 150,
        "layout": "none",
        "recognizer": "openai",
        "model": "m",
        "prompts": "minicpm-ocr",
        "max_tokens": 100,
        "request_timeout": 5.0,
        "retries": 1,
        "concurrency": 2,
        "limit": None,
        "max_pixels": 1000,
        "keep_paratext": True,
        "text_layer": "off",
        "password": None,
        "server_urls": ["http://127.0.0.1:9001"],
    }
    base = ParseOptions(inputs=(), ocr_runtime="openvino", routing="inflight", api_key="secret")
    back = api_options.from_json(stored, base)
    assert (back.pages, back.dpi, back.keep_paratext, back.server_urls) == (
        "1-2",
        150,
        True,
        ("http://127.0.0.1:9001",),
    )
    assert (back.ocr_runtime, back.routing, back.api_key) == ("openvino", "inflight", "secret")
    assert api_options.from_json({**stored, "ocr_runtime": "onnxruntime"}, base).ocr_runtime == "onnxruntime"
