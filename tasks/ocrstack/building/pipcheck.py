"""``python -m ocrstack.building.pipcheck --allow NAME``: ``pip check`` that tolerates known overrides.

The prebuilt upstream path installs ``transformers`` newer than vLLM's own pin with
``--no-deps`` on purpose (issue 5), so ``pip check`` reports exactly that conflict.
This runs ``pip check`` in the current interpreter and exits 0 only when every
reported problem concerns an allowed requirement; anything else is printed and exits 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable

from ocrstack.core import proc


def canonicalize_name(name: str) -> str:
    """PEP 503 normalised name (as ``packaging.utils.canonicalize_name``; stdlib only so the
    target environment needs nothing but pip)."""
    return re.sub(r"[-_.]+", "-", name).lower()


_CONFLICT = re.compile(r"^(?P<who>\S+) \S+ (?:has requirement|requires) (?P<req>[A-Za-z0-9._-]+)")


def classify(output: str, allowed: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split ``pip check`` output lines into ``(allowed, other)`` problems.

    A line is allowed when the requirement it names (``vllm 0.33.0 has requirement
    transformers<5.21.0,...``) is in ``allowed``; unparseable lines count as other.
    """
    ok_names = {canonicalize_name(a) for a in allowed}
    good: list[str] = []
    bad: list[str] = []
    for line in output.splitlines():
        line = line.strip()
        if not line or line.startswith("No broken requirements"):
            continue
        m = _CONFLICT.match(line)
        (good if m and canonicalize_name(m.group("req")) in ok_names else bad).append(line)
    return good, bad


def main(argv: list[str] | None = None) -> int:
    """Run ``pip check``; print allowed and other problems; 0 when only allowed ones remain."""
    parser = argparse.ArgumentParser(prog="python -m ocrstack.building.pipcheck")
    parser.add_argument(
        "--allow", action="append", default=[], help="requirement name whose conflict is expected"
    )
    args = parser.parse_args(argv)
    done = proc.run([sys.executable, "-m", "pip", "check"], capture=True, check=False, echo=False)
    good, bad = classify(done.stdout + done.stderr, args.allow)
    for line in good:
        print(f"expected (override): {line}")
    for line in bad:
        print(f"UNEXPECTED: {line}")
    if done.returncode != 0 and not good and not bad:
        print(f"pip check exited {done.returncode} without a parseable report")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
