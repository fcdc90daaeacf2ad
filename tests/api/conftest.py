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
