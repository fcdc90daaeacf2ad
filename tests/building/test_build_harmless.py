"""Known-harmless warnings (guide 3.2): data, matching, and no clash with the doctor's failure rules."""

from __future__ import annotations

from pathlib import Path

from ocrstack.building import harmless
from ocrstack.doctor import diagnose


def test_each_example_matches_its_rule() -> None:
    rules = harmless.load()
    assert {r.id for r in rules} == {"deepgemm-to-chars-undefined", "flashinfer-precompiled-kernels-missing"}
    for r in rules:
        hits = harmless.scan(r.example, (r,))
        assert [h.rule.id for h in hits] == [r.id]


def test_messages_are_the_guides(shared: Path) -> None:
    text = (shared / "seeds/000_a6ffb5c9f36940fa.txt").read_text(encoding="utf-8")
    assert "undefined symbol: _ZSt8to_charsPcS_DF128_" in text
    assert "FlashInfer's precompiled kernels are missing or do not match" in text
    for r in harmless.load():
        assert r.source == "guide 3.2"


def test_doctor_does_not_call_them_failures() -> None:
    """The doctor rules file (another module's data) must not diagnose a harmless line as an error."""
    for r in harmless.load():
        assert diagnose(r.example) == [], r.id


def test_scan_reports_line_numbers_and_ignores_other_lines() -> None:
    log = "\n".join(
        [
            "INFO starting",
            "WARNING Failed to import from vllm.third_party.deep_gemm with ImportError("
            "'x.so: undefined symbol: "
            "_ZSt8to_charsPcS_DF128_')",
            "ImportError: undefined symbol: cuMemAlloc",  # a different undefined symbol is not harmless
            "WARNING FlashInfer's precompiled kernels are missing or do not match, JIT compiling",
        ]
    )
    hits = harmless.scan(log)
    assert [(h.rule.id, h.line_no) for h in hits] == [
        ("deepgemm-to-chars-undefined", 2),
        ("flashinfer-precompiled-kernels-missing", 4),
    ]
    assert "OCR" in harmless.render(hits)
    assert harmless.scan("undefined symbol: cuMemAlloc") == []
