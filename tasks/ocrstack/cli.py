"""Command-line entry point: builds the parsers and dispatches; no logic lives here.

Each verb is a module in :mod:`ocrstack.commands` exposing
``register(subparsers)``; it adds its parser and sets ``handler`` to a function
``(argparse.Namespace) -> int`` that builds the verb's typed options object and
calls the stage module. Only :func:`main` catches :class:`OcrstackError` and
maps it to the error's exit code (see :mod:`ocrstack.core.errors`).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence

from ocrstack import __version__
from ocrstack.commands import COMMANDS
from ocrstack.core.errors import DiskFull, OcrstackError


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """Return the top-level parser with the subcommands ``commands`` (default: every registered one).

    ``main`` passes none for ``ocrstack --version``, which then imports no verb module.
    """
    parser = argparse.ArgumentParser(
        prog="ocrstack",
        description="Build, serve, parse and verify document-parsing OCR VLMs "
        "(MiniCPM-OCR 1.0, MinerU-Diffusion).",
    )
    parser.add_argument("--version", action="version", version=f"ocrstack {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in commands:
        importlib.import_module(f"ocrstack.commands.{name}").register(sub)
    # handlers that check ocrstack command lines (deploy check) parse them with this very parser,
    # without importing the CLI from below it
    parser.set_defaults(root_parser=parser)
    return parser


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Return ``{"verb": parser, "verb sub": parser, ...}`` for every (nested) subcommand.

    Used by the pixi/nox wiring tests to prove each task calls a real subcommand.
    """
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(prefix: str, parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:  # argparse keeps subparsers only here
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    key = f"{prefix} {name}".strip()
                    out[key] = child
                    walk(key, child)

    walk("", build_parser())
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(() if argv == ["--version"] else COMMANDS)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except OcrstackError as err:
        print(f"ocrstack: error: {err.render()}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("ocrstack: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `ocrstack ... | head`: the reader left; not an error of ours (Python docs, "Note on SIGPIPE")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:  # after BrokenPipeError, an OSError too
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        err = disk_full(exc)  # a full disk is the machine's setup: one line, not a traceback
        print(f"ocrstack: error: {err.render()}", file=sys.stderr)
        return err.exit_code


def disk_full(exc: OSError) -> DiskFull:
    """``ENOSPC``/``EDQUOT`` as a :class:`DiskFull` naming the file being written (issue 25 item 3)."""
    where = f" writing {exc.filename}" if exc.filename else ""
    return DiskFull(
        f"no space left on the device{where} ({exc.strerror or exc})",
        "free space there (or write elsewhere, e.g. another -o) and run again",
    )


if __name__ == "__main__":
    sys.exit(main())
