"""``python -m ocrstack.building.assertions --env NAME``: ``ocrstack versions check`` in a lean form.

Run by the build plans inside the *target* interpreter (the environment just built),
which may lack the dependencies of the other ocrstack commands; this imports only
:mod:`ocrstack.versions` (PyYAML, packaging) and prints the same report as
``ocrstack versions check --env NAME``. Exit 0 when it matches, 4 otherwise (the
:class:`~ocrstack.core.errors.EnvironmentMismatch` code).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ocrstack import versions
from ocrstack.core.errors import EnvironmentMismatch


def main(argv: list[str] | None = None) -> int:
    """Print the versions report for ``--env``; return 0 or the EnvironmentMismatch exit code."""
    parser = argparse.ArgumentParser(prog="python -m ocrstack.building.assertions")
    parser.add_argument("--env", required=True, help="environment name (see ocrstack versions check)")
    parser.add_argument("--file", type=Path, default=None, help="versions file (default: envs/versions.yaml)")
    args = parser.parse_args(argv)
    report = versions.check(args.env, args.file)
    print(report.to_text())
    return 0 if report.ok else EnvironmentMismatch.exit_code


if __name__ == "__main__":
    sys.exit(main())
