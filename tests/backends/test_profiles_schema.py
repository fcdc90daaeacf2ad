"""serve_profiles.yaml is validated by one schema (ocrstack.backends.schema) and read once.

Every problem names the file, the key and the fix; pydantic is imported only when a profiles
file is actually read, so ``ocrstack --help`` does not pay for it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ocrstack.backends import profiles
from ocrstack.core.errors import ConfigError

HEAD = "schema: 1\nbuilds: {b: {engine: vllm}}\nprofiles:\n"
FIX = "fix the serve profiles file"


def _load(tmp_path: Path, text: str) -> profiles.ProfileSet:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return profiles.load(path)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "  x: {build: b, program: [a], args: [], gpus: true}\n",
            r"profiles\.x\.gpus: Extra inputs are not permitted",
        ),
        (
            "  x: {build: b, program: [a], args: [[--port, '1']], checked: {--host: h}}\n",
            r"profiles\.x: .*'checked' names flags it does not pass: \['--host'\]",
        ),
        (
            "  x: {build: b, program: [a], args: [], required-files: [model]}\n",
            r"profiles\.x: .*required file var 'model' has no default",
        ),
        ("  x: {build: b, args: []}\n", r"profiles\.x\.program: Field required"),
        (
            "  x: {build: b, program: [a], args: [], cuda-env: maybe}\n",
            r"profiles\.x\.cuda-env: Input should be a valid boolean",
        ),
    ],
)
def test_a_bad_profile_names_the_file_the_key_and_the_fix(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        _load(tmp_path, HEAD + body)
    assert str(tmp_path / "p.yaml") in str(err.value) and FIX in str(err.value)


def test_file_level_problems(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected a mapping with 'schema: 1'"):
        _load(tmp_path, "schema: 2\n")
    with pytest.raises(ConfigError, match=r"profiles: .*at least 1 item"):
        _load(tmp_path, "schema: 1\nprofiles: {}\n")
    with pytest.raises(ConfigError, match=r"phases\.0\.start: .*regular expression"):
        _load(
            tmp_path,
            HEAD + "  x: {build: b, program: [a], args: []}\nphases: [{name: p, start: '(', end: x}]\n",
        )
    with pytest.raises(
        ConfigError, match=r"builds\.b\.engine: unknown engine 'vlm' \(registered back-ends: vllm"
    ):
        _load(tmp_path, HEAD.replace("vllm", "vlm") + "  x: {build: b, program: [a], args: []}\n")


def test_yaml_numbers_are_text_and_defaults_are_filled(tmp_path: Path) -> None:
    pset = _load(tmp_path, HEAD + "  x: {build: b, program: [a], args: [[--port, 8000]], vars: {n: 3}}\n")
    x = pset.get("x")
    assert x.args == (("--port", "8000"),) and x.vars == {"n": "3"}
    assert (x.gpu, x.cuda_env, x.venv_default, x.served_name) == (False, False, None, "${served_model_name}")
    assert pset.restart.max_plain_restarts == 1 and pset.dspark_check is None


def test_the_packaged_file_is_read_once_per_change() -> None:
    assert profiles.load() is profiles.load()
    check = profiles.load().dspark_check
    assert check is not None and (check.low, check.high) == (5.2, 7.0)


@pytest.mark.proc
def test_importing_the_readers_does_not_import_pydantic() -> None:
    code = (
        "import sys\n"
        "import ocrstack.backends.profiles, ocrstack.serving.plan, ocrstack.client.routing\n"
        "import ocrstack.client.metrics, ocrstack.preflight.deployment, ocrstack.doctor\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
