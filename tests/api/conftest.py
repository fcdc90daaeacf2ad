"""Fixtures for the API tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.helpers import make_page, make_pdf


@pytest.fixture
def tiny_pdf(tmp_path: Path) -> Path:
    return make_pdf(tmp_path / "tiny report.pdf")


@pytest.fixture
def tiny_png(tmp_path: Path) -> Path:
    path = tmp_path / "note.png"
    make_page("Short note", "One page, one heading.").save(path)
    return path


@pytest.fixture(scope="session")
def pg_cluster():
    """A private PostgreSQL cluster for the session (skipped with the reason when not installed)."""
    from support import postgres

    bin_dir = postgres.bindir()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (initdb) not installed: apt-get install postgresql")
    cluster = postgres.Cluster(bin_dir).start()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """URL of a fresh database on :func:`pg_cluster` for this test."""
    import secrets

    return pg_cluster.database(f"t_{secrets.token_hex(6)}")
