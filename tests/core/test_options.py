"""The declare-once option framework (ocrstack.core.options) and its first user, parse's options:
argparse, mapping (HTTP form fields) and Python callers all convert and validate the same way."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest

from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError
from ocrstack.parsing import options as parse_options
from ocrstack.parsing.options import OpenAIOptions, ParseOptions


@dataclass(frozen=True, kw_only=True)
class Demo:
    name: str = opt.option(
        "a", flags=("--name",), choices=("a", "b"), cache=True, help="n (default: {default})"
    )
    count: int = opt.option(2, flags=("-c", "--count"), convert=int, minimum=1, example="2", help="c")
    ratio: float = opt.option(0.5, convert=float, above=0, example="0.5", cache="engine", help="r")
    out: Path | None = opt.option(
        None, flags=("--out",), convert=opt.path, env="DEMO_OUT", cache=True, help="o"
    )
    tags: tuple[str, ...] = opt.option(default_factory=tuple, flags=("--tag",), many=True, help="t")
    loud: bool = opt.option(False, flags=("--loud",), help="l")
    token: str | None = opt.option(None, flags=("--token",), secret=True, help="k")


def _cli(*argv: str) -> Demo:
    p = argparse.ArgumentParser()
    opt.add_arguments(p, Demo)
    return opt.build(Demo, opt.namespace_values(p.parse_args(list(argv)), Demo))


def test_cli_and_mapping_give_the_same_object(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DEMO_OUT", raising=False)
    cli = _cli("--name", "b", "-c", "3", "--out", "x", "--tag", "p", "--tag", "q", "--loud", "--token", "s3")
    mapped = opt.build(
        Demo, {"name": "b", "count": "3", "out": "x", "tags": "p,q", "loud": "true", "token": "s3"}
    )
    assert (
        cli == mapped == Demo(name="b", count=3, out=tmp_path / "x", tags=("p", "q"), loud=True, token="s3")
    )
    assert "s3" not in repr(cli)
    assert _cli() == Demo()  # absent flags keep the declared defaults


def test_env_fills_an_absent_option_and_the_flag_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMO_OUT", "/from/env")
    assert _cli().out == Path("/from/env")
    assert _cli("--out", "/flag").out == Path("/flag")


@pytest.mark.parametrize(
    ("values", "message", "fix"),
    [
        ({"count": "0"}, "--count must be >= 1, got 0", "use e.g. --count 2"),
        ({"ratio": "0"}, "ratio must be > 0, got 0", "use e.g. ratio 0.5"),
        ({"name": "z"}, "unknown name kind 'z'", "use --name with one of: a, b"),
        ({"count": "many"}, "--count: 'many' is not a valid int", "use e.g. --count 2"),
        ({"loud": "maybe"}, "--loud: 'maybe' is not a valid boolean", "check --loud"),
        ({"colour": "red"}, "unknown option(s): colour", "use only: name, count"),
    ],
)
def test_bad_values_are_usage_errors_naming_the_flag_and_a_fix(values, message, fix):
    with pytest.raises(UsageError) as err:
        opt.build(Demo, values)
    assert err.value.message == message and err.value.remedy.startswith(fix)


def test_validate_checks_objects_made_directly():
    with pytest.raises(UsageError, match="--count must be >= 1, got -1"):
        opt.validate(Demo(count=-1))
    opt.validate(Demo(out=None))  # an unset optional value is fine


def test_help_shows_declared_defaults():
    p = argparse.ArgumentParser()
    opt.add_arguments(p, Demo)
    text = p.format_help()
    assert "n (default: a)" in text and "--count COUNT" in text and "--loud" in text


def test_cache_values_only_declared_ones_and_engine_scoped_on_demand():
    d = Demo(out=Path("/o"), count=7)
    assert opt.cache_values(d) == {"name": "a", "ratio": None, "out": "/o"}
    assert opt.cache_values(d, {"ratio"})["ratio"] == 0.5


def test_project_takes_an_engine_class_out_of_the_flat_options():
    flat = ParseOptions(inputs=(), concurrency=7, retries=1, api_key="sk-1")
    nested = OpenAIOptions.of(flat)
    assert type(nested) is OpenAIOptions and nested.kind == "openai"
    assert (nested.concurrency, nested.retries, nested.api_key) == (7, 1, "sk-1")
    assert "sk-1" not in repr(nested) and "sk-1" not in repr(flat)


def test_engine_defaults_are_declared_once():
    """ParseOptions inherits the openai defaults; nothing restates them."""
    d, e = ParseOptions(inputs=()), OpenAIOptions()
    assert (d.concurrency, d.request_timeout, d.retries) == (e.concurrency, e.request_timeout, e.retries)
    assert (e.concurrency, e.request_timeout, e.retries) == (4, 600.0, 3)
    names = [f.name for f, _ in opt.specs(ParseOptions)]
    assert len(names) == len(set(names)) and "inputs" not in names


def test_parse_from_mapping_converts_and_validates_like_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    o = parse_options.from_mapping({"dpi": "150", "pages": "1-2", "server_urls": "http://a:1,http://b:2"})
    assert (o.dpi, o.pages, o.server_urls) == (150, "1-2", ("http://a:1", "http://b:2"))
    with pytest.raises(UsageError) as err:
        parse_options.from_mapping({"concurrency": "0"})
    assert str(err.value) == "--concurrency must be >= 1, got 0 -- fix: use e.g. --concurrency 4"
    with pytest.raises(UsageError, match="unknown recognizer kind 'nope'"):
        parse_options.from_mapping({"recognizer": "nope"})
    with pytest.raises(UsageError, match="--timeout must be > 0"):
        parse_options.from_mapping({"request_timeout": "0"})
    # typed values (a service's base options) pass through unchanged
    base = ParseOptions(inputs=(), output=tmp_path / "o")
    merged = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.name != "inputs"}
    assert parse_options.from_mapping({**merged, "dpi": "300"}) == dataclasses.replace(base, dpi=300)


@dataclass(frozen=True)
class Placed:
    src: Path = opt.option(flags=("--src",), convert=Path, help="required: no default")
    check: bool = opt.option(True, flags=("--no-check",), help="a default True flips off")
    mode: str = opt.option("a", flags=("--mode",), help="{what} mode", where=(opt.CLI, opt.SERVICE))
    level: int = opt.option(1, flags=("--level",), convert=int, where=(opt.REQUEST,), help="l")


def test_where_selects_the_options_of_a_place():
    names = {
        place: [f.name for f, _ in opt.specs(Placed, place)] for place in (opt.CLI, opt.SERVICE, opt.REQUEST)
    }
    assert names == {opt.CLI: ["src", "check", "mode"], opt.SERVICE: ["mode"], opt.REQUEST: ["level"]}
    with pytest.raises(ValueError, match="unknown option place"):
        opt.option(1, help="x", where=("everywhere",))


def test_service_flags_and_values_come_only_from_service_options():
    p = argparse.ArgumentParser()
    opt.add_arguments(p, Placed, opt.SERVICE, what="the default")
    assert "--src" not in p.format_help() and "the default mode" in p.format_help()
    args = argparse.Namespace(mode="b", src="elsewhere", level="3")
    assert opt.namespace_values(args, Placed, opt.SERVICE) == {"mode": "b"}


def test_required_flags_and_flags_that_turn_a_default_off():
    p = argparse.ArgumentParser()
    opt.add_arguments(p, Placed, what="a")
    with pytest.raises(SystemExit):
        p.parse_args([])  # --src has no default: argparse requires it
    built = opt.build(Placed, opt.namespace_values(p.parse_args(["--src", "x", "--no-check"]), Placed))
    assert built == Placed(src=Path("x"), check=False)
    assert opt.build(Placed, opt.namespace_values(p.parse_args(["--src", "x"]), Placed)).check is True


@dataclass(frozen=True)
class Either:
    python: str = opt.option("py", flags=("--python",), exclusive="toolkit", help="p")
    root: str | None = opt.option(None, flags=("--root",), exclusive="toolkit", help="r")
    port: int | None = opt.option(None, flags=("--port",), convert=int, help="port")


def test_flags_of_one_exclusive_set_are_refused_together():
    p = argparse.ArgumentParser()
    opt.add_arguments(p, Either)
    with pytest.raises(SystemExit):
        p.parse_args(["--python", "x", "--root", "y"])
    assert opt.namespace_values(p.parse_args(["--root", "y"]), Either) == {"root": "y"}


def test_a_prefix_keeps_a_subcommands_flag_apart_from_its_parents():
    p = argparse.ArgumentParser()
    p.add_argument("--port")
    sub = p.add_subparsers(dest="action")
    opt.add_arguments(sub.add_parser("stop"), Either, prefix="stop_")
    args = p.parse_args(["--port", "1", "stop", "--port", "2"])
    assert args.port == "1"
    assert opt.build(Either, opt.namespace_values(args, Either, prefix="stop_")) == Either(port=2)
    assert opt.namespace_values(p.parse_args(["--port", "1", "stop"]), Either, prefix="stop_") == {}


@dataclass(frozen=True)
class Stages:
    stages: tuple[str, ...] = opt.option((), flags=("--stage",), many=True, choices=("a", "b"), help="s")


def test_each_value_of_a_repeatable_option_is_checked_against_the_choices():
    assert opt.build(Stages, {"stages": ["a", "b"]}).stages == ("a", "b")
    with pytest.raises(UsageError, match="unknown stage kind 'c'"):
        opt.build(Stages, {"stages": ["a", "c"]})
