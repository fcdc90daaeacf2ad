"""Version assertions for the MinerU-Diffusion SGLang environment (issue 14)."""

from __future__ import annotations

from ocrstack import versions


def _by_dist(env: str) -> dict:
    return {e.dist: e for e in versions.expectations(env)}


def test_mineru_diffusion_pins_come_from_the_fork():
    e = _by_dist("mineru-diffusion")
    # python/pyproject.toml of Niujunbo2002/sglang at c7b70ac8: torch==2.9.1, transformers==5.3.0
    assert e["torch"].test("2.9.1") and e["torch"].test("2.9.1+cu128")
    assert not e["torch"].test("2.8.0+cu128")  # the repository's HF-path torch is not the server's
    assert e["transformers"].test("5.3.0") and not e["transformers"].test("4.52.1")


def test_sglang_must_be_the_pinned_fork_commit():
    sg = _by_dist("mineru-diffusion")["sglang"]
    assert sg.test("0.5.9.post2.dev1043+gc7b70ac86")
    assert not sg.test("0.5.9")  # an upstream release (SDAR support reverted, sgl-project/sglang#19032)
    assert not sg.test("0.0.0.dev0")  # checkout without tags: the fix says git fetch --tags
    assert "fetch --tags" in sg.fix and "ocrstack build mineru-diffusion" in sg.fix


def test_python_pin_is_the_readme_interpreter():
    assert versions.pin("python.mineru-diffusion") == "3.12"
    assert versions.pin("mineru-diffusion.python-conda") == "3.12.*"
