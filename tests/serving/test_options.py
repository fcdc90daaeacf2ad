"""``ocrstack serve``'s options: flags derived from ServeOptions/StopOptions/CheckOptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack import cli
from ocrstack.commands import serve as serve_cmd
from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError
from ocrstack.serving.options import DEFAULT_RUN_DIR, ServeOptions, StopOptions


def _args(*argv: str):
    return cli.build_parser().parse_args(["serve", *argv])


def test_shortcut_flags_then_set_make_the_placeholders() -> None:
    opts = serve_cmd.options_from_args(
        _args("--model", "/m", "--port", "9", "--set", "draft-model=/d", "--no-wait")
    )
    assert opts.placeholders()["model"] == "/m" and opts.placeholders()["port"] == 9
    assert opts.placeholders()["draft_model"] == "/d" and opts.wait is False and opts.restart is True
    assert serve_cmd.options_from_args(_args("--set", "port=7", "--port", "9")).placeholders()["port"] == "7"
    assert ServeOptions() == serve_cmd.options_from_args(_args())


def test_a_bad_set_or_port_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--set expects VAR=VALUE, got 'x'"):
        serve_cmd.options_from_args(_args("--set", "x"))
    with pytest.raises(UsageError, match="--port: 'x' is not a valid int"):
        serve_cmd.options_from_args(_args("--port", "x"))


def test_stop_keeps_its_own_port_apart_from_serves() -> None:
    args = _args("--port", "1", "stop", "--run-dir", "r")
    stop = opt.build(StopOptions, opt.namespace_values(args, StopOptions, prefix="stop_"))
    assert stop == StopOptions(port=None, run_dir=Path("r"))
    assert (
        serve_cmd.options_from_args(args).port == 1
        and serve_cmd.options_from_args(args).run_dir == DEFAULT_RUN_DIR
    )


def test_dspark_check_refuses_two_different_ports() -> None:
    with pytest.raises(UsageError, match="two different ports given: serve --port 1, dspark-check --port 2"):
        serve_cmd._dspark_check(_args("--port", "1", "dspark-check", "--port", "2"))
