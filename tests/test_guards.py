"""The guards of tests/conftest.py: an unmarked test cannot start a process or listen on a port,
and ``network`` tests run only when ``-m`` selects them."""

from __future__ import annotations

import socket
import subprocess
import sys
from types import SimpleNamespace

import pytest

import conftest


def test_an_unmarked_test_cannot_start_a_process() -> None:
    with pytest.raises(AssertionError, match="mark it with one of"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_an_unmarked_test_cannot_listen() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        with pytest.raises(AssertionError, match=r"mark the test with one of \['server', 'slow'\]"):
            sock.listen()


@pytest.mark.server
def test_a_server_test_may_listen() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()


def _item(markexpr: str, *markers: str) -> SimpleNamespace:
    return SimpleNamespace(
        get_closest_marker=lambda name: name if name in markers else None,
        config=SimpleNamespace(option=SimpleNamespace(markexpr=markexpr)),
    )


@pytest.mark.parametrize("markexpr", ["", "not slow", "server"])
def test_network_tests_are_skipped_unless_selected(markexpr: str) -> None:
    with pytest.raises(pytest.skip.Exception, match="run with -m network"):
        conftest.pytest_runtest_setup(_item(markexpr, "network"))


@pytest.mark.parametrize("markexpr", ["network", "network and slow"])
def test_network_tests_run_when_selected(markexpr: str) -> None:
    conftest.pytest_runtest_setup(_item(markexpr, "network"))  # no skip
    conftest.pytest_runtest_setup(_item("", "slow"))  # other markers are not touched
