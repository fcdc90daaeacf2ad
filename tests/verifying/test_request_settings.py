"""``verify`` reports the diffusion request settings of the prompt set a parse used (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

from ocrstack.core.results import Report, Status
from ocrstack.verifying.options import VerifyOptions
from ocrstack.verifying.request_settings import request_settings_check
from ocrstack.verifying.run import output_section


def blocks_file(tmp_path: Path, prompts: str) -> Path:
    f = tmp_path / "page.blocks.json"
    f.write_text(json.dumps({"schema": 1, "model": {"prompts": prompts}, "complete": True, "pages": []}))
    return f


def test_mineru_settings_are_reported(tmp_path: Path) -> None:
    check = request_settings_check(blocks_file(tmp_path, "mineru-diffusion"))
    assert check is not None and check.status is Status.PASS
    # the repository client's values (engines/sglang/__init__.py defaults)
    for part in (
        "denoising_steps=32",
        "block_length=32",
        "denoising_strategy=low_confidence_dynamic",
        "dynamic_threshold=0.95",
        "layout=2048",
        "table=2048",
        "crop: min_edge=28, max_edge_ratio=50",
    ):
        assert part in check.detail, part


def test_sets_without_extra_settings_report_nothing(tmp_path: Path) -> None:
    assert request_settings_check(blocks_file(tmp_path, "minicpm-ocr")) is None
    assert request_settings_check(tmp_path / "absent.blocks.json") is None


def test_verify_output_section_lists_them(tmp_path: Path) -> None:
    md = tmp_path / "page.md"
    md.write_text("<!-- page 1 -->\nHello\n")
    blocks_file(tmp_path, "mineru-diffusion")
    report = Report("t")
    output_section(VerifyOptions(markdown=md), report)
    names = [c.name for c in report.checks]
    assert "output:request-settings" in names
