"""Jobs of the dispatcher (:mod:`ocrstack.client.dispatch`): one chat request each, grouped by page."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ocrstack.client.chat import Completion


class JobGroup:
    """Jobs that belong together (one page); cancelling fails the not-yet-sent ones at once."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def cancel(self, error: BaseException) -> None:
        """Fail every job of this group that has not been sent yet with ``error``."""
        if self.error is None:
            self.error = error


@dataclass
class Job:
    """One request: its body, the caller's future, its page group; ``attempts`` sent, ``strikes``
    (counted failures of its own, :mod:`ocrstack.client.breaker`), ``errors`` seen."""

    body: dict[str, Any]
    future: Future[Completion]
    group: JobGroup | None
    attempts: int = 0
    strikes: int = 0
    errors: list[str] = field(default_factory=list)
