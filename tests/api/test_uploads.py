"""Upload names never become paths."""

from __future__ import annotations

import pytest

from ocrstack.api.uploads import safe_name


@pytest.mark.parametrize(
    ("given", "kind", "expected"),
    [
        ("report.pdf", "pdf", "report.pdf"),
        ("../../etc/passwd", "png", "passwd.png"),
        ("..\\..\\windows\\evil.exe", "pdf", "evil.pdf"),
        ("/abs/path/scan.tiff", "tiff", "scan.tif"),
        (".hidden", "png", "hidden.png"),
        ("", "jpeg", "document.jpg"),
        ("..", "pdf", "document.pdf"),
        ("a b;rm -rf *.pdf", "pdf", "a b_rm -rf _.pdf"),
        ("x" * 300 + ".pdf", "pdf", "x" * 100 + ".pdf"),
        ("名前.png", "png", "名前.png"),
        ("tab\there\n.pdf", "pdf", "tab_here_.pdf"),
        ("  spaced  .pdf", "pdf", "spaced.pdf"),
    ],
)
def test_safe_name(given: str, kind: str, expected: str) -> None:
    assert safe_name(given, kind) == expected
