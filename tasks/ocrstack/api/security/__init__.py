"""The attack table of issue 25 (``ocrstack api security``, ``nox -s security``): each case tried on
loopback against the CLI or ``ocrstack api serve``, with what was expected, what was observed and
whether it held.

* :mod:`~ocrstack.api.security.service`: one service on 127.0.0.1 with a credentialed recognizer
  URL (fake OpenAI servers) and the attacks on it: dripping, huge-bodied and dying recognizers
  (``/health`` latency measured while each such job runs: the done-when's "answerable within
  1 s"), DELETE of a blocked job, cost bounds, cross-origin and Host checks, invented methods,
  security headers, then a grep of every answer, the log and the data dir for the secret.
* :mod:`~ocrstack.api.security.diskfull`: a service whose data dir is a 4 MiB tmpfs (its own
  mount namespace) filled by uploads: 507, ``/health`` answered, ``/ready`` 503, recovery.
* :mod:`~ocrstack.api.security.local`: the text rules on 10^5 vs 10^6-letter runs (a ratio, not a
  wall-clock bound), a CLI batch with a non-UTF-8 and a 240-character name and an unpaired
  surrogate, and a damaged job database refused at start.

Every wait is bounded, every process and fake server is stopped, only 127.0.0.1 is contacted.
Exit status 1 when any case failed.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Case:
    """One row: the attack, what should happen, what did, and whether that is what should."""

    case: str
    expected: str
    observed: str
    held: bool


@dataclass
class Table:
    """The rows in the order they ran."""

    rows: list[Case] = field(default_factory=list)

    def add(self, case: str, expected: str, observed: str, held: bool) -> None:
        """Append one row."""
        self.rows.append(Case(case, expected, observed, bool(held)))

    def attempt(self, case: str, expected: str, check: object) -> None:
        """Run ``check()`` -> ``(observed, held)``; an exception is a failed row naming it."""
        try:
            observed, held = check()  # type: ignore[operator]
        except Exception as exc:  # one broken case must not hide the others
            observed, held = f"error: {type(exc).__name__}: {exc}"[:300], False
        self.add(case, expected, observed, held)

    @property
    def ok(self) -> bool:
        """True when every case held."""
        return all(r.held for r in self.rows)

    def text(self) -> str:
        """Plain-text table: case, expected, observed, held/FAILED; a last line with the counts."""
        head = ("case", "expected", "observed", "result")
        lines = [(r.case, r.expected, r.observed, "held" if r.held else "FAILED") for r in self.rows]
        widths = [max(len(x[i]) for x in [head, *lines]) for i in range(3)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
        out = [fmt.format(*head), fmt.format(*("-" * w for w in [*widths, 6]))]
        out += [fmt.format(*line) for line in lines]
        failed = sum(not r.held for r in self.rows)
        out.append(f"{len(self.rows)} case(s): {len(self.rows) - failed} held, {failed} failed")
        return "\n".join(out)

    def to_json(self) -> str:
        """The rows as JSON (``ok`` and ``rows``)."""
        return json.dumps({"ok": self.ok, "rows": [asdict(r) for r in self.rows]}, indent=2)


def run(workdir: Path | None = None) -> Table:
    """Run every case (local ones first, then the service's); inputs, data and logs under
    ``workdir`` (a temporary directory, removed, when None)."""
    from ocrstack.api.security import diskfull, local, service

    table = Table()
    with tempfile.TemporaryDirectory(prefix="ocrstack-security-") as tmp:
        root = Path(workdir) if workdir is not None else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        local.run(table, root / "local")
        service.run(table, root / "service")
        diskfull.run(table, root / "diskfull")
    return table
