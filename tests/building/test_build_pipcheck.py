"""pip check with the one expected override (prebuilt upstream path) and the extension-file probe."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.building import extension
from ocrstack.building.pipcheck import classify

# pip check output format (pip 24/25):
#   "<dist> <version> has requirement <req>, but you have <dist> <version>."
OVERRIDE = "vllm 0.33.0 has requirement transformers<5.21.0,>=5.16.1, but you have transformers 5.24.0."


def test_only_the_override_is_allowed() -> None:
    good, bad = classify(OVERRIDE, ["transformers"])
    assert good == [OVERRIDE] and bad == []
    other = "vllm 0.33.0 has requirement torch==2.14.0, but you have torch 2.14.1."
    missing = "vllm 0.33.0 requires xgrammar, which is not installed."
    good, bad = classify("\n".join([OVERRIDE, other, missing]), ["transformers"])
    assert good == [OVERRIDE] and bad == [other, missing]


def test_clean_and_unparseable_output() -> None:
    assert classify("No broken requirements found.", ["transformers"]) == ([], [])
    assert classify("something odd happened", ["transformers"]) == ([], ["something odd happened"])


def test_extension_found_without_importing(tmp_path: Path, monkeypatch) -> None:
    pkg = tmp_path / "fakevllm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert extension.find_extension("_C_stable_libtorch.abi3.so", "fakevllm") is None
    assert extension.main(["_C_stable_libtorch.abi3.so", "fakevllm"]) == 1
    (pkg / "_C_stable_libtorch.abi3.so").write_bytes(b"\x7fELF")
    assert (
        extension.find_extension("_C_stable_libtorch.abi3.so", "fakevllm")
        == pkg / "_C_stable_libtorch.abi3.so"
    )
    assert extension.main(["_C_stable_libtorch.abi3.so", "fakevllm"]) == 0


def test_assertions_module_uses_the_versions_check(capsys) -> None:
    """The lean entry point gives the same verdict as `ocrstack versions check` for this interpreter."""
    from ocrstack.building import assertions
    from ocrstack.core.errors import EnvironmentMismatch

    assert assertions.main(["--env", "cpu-test"]) == 0  # this test environment matches its own pins
    assert assertions.main(["--env", "vllm-build"]) == EnvironmentMismatch.exit_code  # no vLLM here
    assert "transformers" in capsys.readouterr().out


def fake_dist(site: Path, name: str, version: str, requires: list[str]) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(meta) + "\n")
    (info / "INSTALLER").write_text("test\n")
    (info / "RECORD").write_text("")


@pytest.mark.proc
@pytest.mark.slow
def test_real_pip_check_in_a_venv(tmp_path: Path) -> None:
    """Metadata-only fake dists reproduce the prebuilt situation for the real `pip check`."""
    import subprocess
    import sys

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)  # with pip, nothing else
    site = next((venv / "lib").glob("python3*/site-packages"))
    fake_dist(site, "fakevllm", "0.33.0", ["faketransformers<5.21,>=5.16.1"])
    fake_dist(site, "faketransformers", "5.24.0", [])
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "tasks"), "PATH": "/usr/bin:/bin"}
    cmd = [str(venv / "bin" / "python"), "-m", "ocrstack.building.pipcheck"]
    ok = subprocess.run([*cmd, "--allow", "faketransformers"], capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "expected (override): fakevllm 0.33.0 has requirement faketransformers" in ok.stdout
    bad = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert bad.returncode == 1
    assert "UNEXPECTED: fakevllm 0.33.0 has requirement faketransformers" in bad.stdout
