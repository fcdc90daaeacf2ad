"""Fixtures for the build tests: a fake target interpreter probe (no process started)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

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
        def probe(py, names):  # mirrors target.probe
            probed.append(str(py))
            return target.TargetFacts(python, str(py), {n: (dists or {}).get(n) for n in names})

        monkeypatch.setattr(target, "probe", probe)
        return probed

    return install


@pytest.fixture
def pinned_repos(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Tiny git checkouts ``src/vllm`` and ``src/transformers``, and a versions.yaml copy
    (``$OCRSTACK_VERSIONS``) whose fork-commit pins are their HEADs. Needs the ``proc`` marker (git)."""
    from .test_build_sources import make_repo

    v = make_repo(tmp_path / "src" / "vllm", {"setup.py": "# vllm\n"})
    t = make_repo(tmp_path / "src" / "transformers", {"setup.py": "# transformers\n"})
    data = yaml.safe_load((repo / "envs" / "versions.yaml").read_text())
    data["vllm"]["fork-commit"], data["transformers"]["fork-commit"] = v[:10], t[:10]
    (tmp_path / "src" / "versions.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("OCRSTACK_VERSIONS", str(tmp_path / "src" / "versions.yaml"))
    return {"vllm": tmp_path / "src" / "vllm", "transformers": tmp_path / "src" / "transformers"}
