"""The one YAML data-file reader and the versions-file lookup."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.core import paths
from ocrstack.core.errors import ConfigError, InputError


@pytest.mark.parametrize(
    ("content", "reason"),
    [(None, "No such file"), (b"a: [1, 2\n", "expected"), (b"\xff\xfe\x00bad", "codec")],
)
def test_read_yaml_errors_name_the_file(tmp_path: Path, content: bytes | None, reason: str) -> None:
    f = tmp_path / "x.yaml"
    if content is not None:
        f.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        paths.read_yaml(f, "test data")
    text = str(err.value)
    assert text.startswith(f"{f}: cannot read test data") and reason in text and "\n" not in text


def test_read_yaml_user_files_raise_input_errors(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("a: {")
    with pytest.raises(InputError):
        paths.read_yaml(f, "the prompt file", error=InputError)
    f.write_text("a: 1\n")
    assert paths.read_yaml(f, "the prompt file") == {"a": 1}


def test_versions_file_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OCRSTACK_VERSIONS", str(tmp_path / "v.yaml"))
    assert paths.versions_file() == tmp_path / "v.yaml"
    monkeypatch.delenv("OCRSTACK_VERSIONS")
    assert paths.versions_file() == paths.repo_root() / "envs" / "versions.yaml"
