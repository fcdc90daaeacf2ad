"""``ocrstack bench``'s options: flags derived from BenchOptions, --quick values under given flags."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ocrstack.bench.options import BenchOptions, from_values
from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError


def _parse(*argv: str) -> BenchOptions:
    p = argparse.ArgumentParser()
    opt.add_arguments(p, BenchOptions)
    return from_values(opt.namespace_values(p.parse_args(argv), BenchOptions))


def test_quick_values_with_the_given_flags_on_top(tmp_path: Path) -> None:
    assert _parse() == BenchOptions()
    quick = _parse("--quick", "--endpoints", "1,4", "--no-embedded", "--workdir", str(tmp_path))
    assert quick == BenchOptions.quick(endpoints=(1, 4), embedded=False, workdir=tmp_path.absolute())
    assert _parse("--latency", "0.3").latency == 0.3
    assert _parse("--only", "peers, rss").only == ("peers", "rss")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--latency", "0"), "--latency must be > 0, got 0.0"),
        (("--latency", "x"), "--latency: 'x' is not a valid float"),
        (("--endpoints", "1,x"), "--endpoints: expected comma-separated positive integers, got '1,x'"),
        (("--rss-pages", "5"), "--rss-pages takes at least two numbers"),
        (("--only", "peers,nope"), "--only: unknown section nope"),
    ],
)
def test_bad_values_are_usage_errors(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(UsageError) as err:
        _parse(*argv)
    assert err.value.message == message
