"""What a fresh interpreter imports: tests that prove a path never loads a heavy package."""

from __future__ import annotations

import subprocess
import sys


def fresh_imports(code: str, packages: tuple[str, ...]) -> list[str]:
    """Run ``code`` in a fresh ``python -c`` (this interpreter, this environment) and return the
    modules of ``packages`` (each package or any of its submodules) it left in ``sys.modules``,
    sorted.

    Raises:
        subprocess.CalledProcessError: ``code`` failed (its stderr is on the exception).
        subprocess.TimeoutExpired: it ran past 120 s.
    """
    listing = f"sorted(m for m in sys.modules if m.split('.')[0] in {packages!r})"
    probe = f"{code}\nimport sys\nprint('\\n'.join({listing}))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout.split()
