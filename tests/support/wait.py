"""Waiting on something a test can observe, with a bounded deadline and a clear failure.

Tests never sleep for a guessed time: they poll the condition they need (a request seen, a file
written, a status reached) and fail with what they waited for when the deadline passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], what: str, timeout: float = 30.0, interval: float = 0.01) -> T:
    """Poll ``condition()`` until it returns a truthy value and return that value.

    ``timeout`` and ``interval`` are seconds; ``what`` names the awaited state for the message.

    Raises:
        AssertionError: ``condition()`` stayed falsy for ``timeout`` s ("timed out after N s
            waiting for <what>"; the last value is appended).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last: {value!r})")
        time.sleep(interval)
