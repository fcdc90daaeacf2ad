"""``ocrstack verify`` flags come from VerifyOptions' declarations: the CLI builds the same object a
Python caller would, and the converters keep the old messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.cli import build_parser
from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError
from ocrstack.verifying.options import VerifyOptions
from ocrstack.versions.endpoints import default_model


def from_cli(*argv: str) -> VerifyOptions:
    args = build_parser().parse_args(["verify", *argv])
    return opt.build(VerifyOptions, opt.namespace_values(args, VerifyOptions))


def test_flags_build_the_same_object_as_python() -> None:
    got = from_cli(
        "--image", "t.png", "--kind", "other", "--server-url", "http://a:1=m", "--server-url", "http://b:2",
        "--mm-processor-kwargs", '{"z": 1, "a": "4x"}', "--no-blocks", "--expect", "table@2",
    )  # fmt: skip
    assert got == VerifyOptions(
        image=Path("t.png"),
        table=False,
        servers=(("http://a:1", "m"), ("http://b:2", default_model())),
        mm_kwargs=(("a", "4x"), ("z", 1)),
        use_blocks=False,
        expect=("table@2",),
    )
    assert from_cli() == VerifyOptions() and from_cli("--kind", "table").table is True


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kind", "chart"], "--kind: 'chart' is not a valid kind"),
        (["--server-url", "a:1"], "--server-url 'a:1': expected http(s)://HOST:PORT[=MODEL]"),
        (["--mm-processor-kwargs", "[1]"], "--mm-processor-kwargs must be a JSON object"),
        (["--mm-processor-kwargs", "{"], "--mm-processor-kwargs: not JSON"),
    ],
)
def test_bad_values_are_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        from_cli(*argv)
    assert info.value.message.startswith(message)
