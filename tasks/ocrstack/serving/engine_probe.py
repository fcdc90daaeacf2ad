"""Run inside an engine's throwaway environment: parse argument lists with the engine's own parser.

Standard library only apart from the engine itself: ``ocrstack.serving.engine_args`` runs this file
with the environment's interpreter (``python engine_probe.py vllm|sglang``), writes
``{"argvs": {name: [arg, ...]}}`` to its stdin and reads one JSON object from its stdout:

    {"engine": "vllm", "release": "0.33.0",
     "options": ["--model", ...],                 # every option string the parser defines
     "results": {name: {"error": null | "one line"}},
     "speculative": {"fields": [...], "methods": [...]}}   # vLLM only

Parsers used (read from the wheels):
  vllm:   ``python -m vllm.entrypoints.openai.api_server`` builds
          ``make_arg_parser(FlexibleArgumentParser(...))`` (vllm/entrypoints/launchers/api_server/
          entry.py, main()), then ``validate_parsed_serve_args``; both from
          vllm/entrypoints/common/cli_args.py. ``--speculative-config`` is a JSON dict whose keys
          are the fields of ``vllm.config.speculative.SpeculativeConfig`` and whose ``method`` is
          one of ``SpeculativeMethod``.
  sglang: ``sglang serve`` / ``python -m sglang.launch_server`` parse with
          ``ServerArgs.add_cli_args(parser)`` then ``ServerArgs.from_cli_args(args)``
          (sglang/srt/server_args.py, prepare_server_args). ``from_cli_args`` only builds the
          dataclass; its ``__post_init__`` checks the GPU and model, so it is caught and reported
          separately from parse errors (``post_init``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import sys
import typing
from importlib import metadata


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return sorted({s for a in parser._actions for s in a.option_strings})


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.Namespace | None, str | None]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(argv), None
    except SystemExit:
        lines = [x for x in err.getvalue().strip().splitlines() if x.strip()]
        return None, (lines[-1] if lines else "argument parser exited")


def _flatten_literal(tp: object) -> list[str]:
    out: list[str] = []
    for arg in typing.get_args(tp):
        if isinstance(arg, str):
            out.append(arg)
        else:
            out.extend(_flatten_literal(arg))
    return out


def vllm(argvs: dict[str, list[str]]) -> dict[str, object]:
    """Parse with vLLM's api_server parser; see the module docstring."""
    from vllm.config.speculative import SpeculativeConfig, SpeculativeMethod
    from vllm.entrypoints.common.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    def parser() -> argparse.ArgumentParser:
        return make_arg_parser(
            FlexibleArgumentParser(description="vLLM OpenAI-Compatible RESTful API server.")
        )

    results: dict[str, object] = {}
    for name, argv in argvs.items():
        ns, error = _parse(parser(), argv)
        if ns is not None:
            try:
                validate_parsed_serve_args(ns)
            except Exception as exc:  # reported, not hidden
                error = f"validate_parsed_serve_args: {type(exc).__name__}: {exc}"
        results[name] = {"error": error}
    return {
        "engine": "vllm",
        "release": metadata.version("vllm"),
        "options": _options(parser()),
        "results": results,
        "speculative": {
            "fields": sorted(f.name for f in dataclasses.fields(SpeculativeConfig)),
            "methods": sorted(set(_flatten_literal(SpeculativeMethod))),
        },
    }


def sglang(argvs: dict[str, list[str]]) -> dict[str, object]:
    """Parse with SGLang's ServerArgs CLI; see the module docstring."""
    from sglang.srt.server_args import ServerArgs

    def parser() -> argparse.ArgumentParser:
        p = argparse.ArgumentParser()
        ServerArgs.add_cli_args(p)
        return p

    results: dict[str, object] = {}
    for name, argv in argvs.items():
        ns, error = _parse(parser(), argv)
        post_init = None
        if ns is not None:
            try:
                ServerArgs.from_cli_args(ns)
            except Exception as exc:  # needs a GPU/model; reported separately
                post_init = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        results[name] = {"error": error, "post_init": post_init}
    return {
        "engine": "sglang",
        "release": metadata.version("sglang"),
        "options": _options(parser()),
        "results": results,
    }


def main() -> int:
    """Entry point: ``python engine_probe.py ENGINE`` with the request JSON on stdin."""
    engine = sys.argv[1]
    request = json.load(sys.stdin)
    out = {"vllm": vllm, "sglang": sglang}[engine](request["argvs"])
    sys.stdout.write("\n@@ENGINE-PROBE@@" + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
