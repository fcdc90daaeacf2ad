"""Fixtures for the build tests: a fake target interpreter probe (no process started)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ocrstack.building import target


@pytest.fixture
def fake_target(monkeypatch: pytest.MonkeyPatch) -> Callable[..., list[str]]:
    """Replace :func:`ocrstack.building.target.probe` with a fake answering ``python`` and ``dists``.

    Call it with the version the fake interpreter reports and the SDK packages it has;
    returns the list of interpreters that were probed. The default (a bare call) is a
    good ``vllm-build`` target: Python 3.13.9 (guide 9), no SDK packages.
    """
    probed: list[str] = []

    def install(python: str = "3.13.9", dists: dict[str, str] | None = None) -> list[str]:
        def probe(py, names):  # noqa: ANN001, ANN202 - mirrors target.probe
            probed.append(str(py))
            return target.TargetFacts(python, str(py), {n: (dists or {}).get(n) for n in names})

        monkeypatch.setattr(target, "probe", probe)
        return probed

    return install
