"""The parse run's progress bar (tqdm, on stderr), drawn only once a page is under way."""

from __future__ import annotations

import sys


class Progress:
    """The run's tqdm bar (pages done, pages/s, ``failed=N``), created on first use.

    :meth:`start` draws it; :meth:`update` and :meth:`fail` start it when needed. Nothing is drawn
    for a run that ends before its first page is under way, so an up-front error is printed alone.
    """

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.failed = 0  # failures over all inputs, shown as a postfix next to pages done and pages/s
        self._bar = None

    def start(self) -> None:
        """Create and draw the bar (once; a no-op afterwards)."""
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(
                total=self.total, unit="page", disable=not self.enabled, file=sys.stderr, dynamic_ncols=True
            )
            self._bar.set_postfix(failed=self.failed)

    def update(self, n: int = 1) -> None:
        """Count ``n`` pages done (computed, from the cache, or of an up-to-date document)."""
        self.start()
        self._bar.update(n)

    def fail(self) -> None:
        """Count one failed page in the ``failed=`` postfix."""
        self.failed += 1
        self.start()
        self._bar.set_postfix(failed=self.failed)

    def close(self) -> None:
        """Close the bar if it was started (its last line stays on stderr)."""
        if self._bar is not None:
            self._bar.close()
