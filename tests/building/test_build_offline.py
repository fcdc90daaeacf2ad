"""Offline --deps variables (guide 3.2) and the GitHub preflight."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ocrstack.building import offline
from ocrstack.core.errors import ConfigError, InputError

GUIDE = "seeds/000_a6ffb5c9f36940fa.txt"


def test_data_matches_the_guide_text(shared: Path) -> None:
    """Every `export X="$DEPS/..."` line of guide 3.2, in order, and CMAKE_ARGS."""
    text = (shared / GUIDE).read_text(encoding="utf-8")
    exports = re.findall(r'export (\w+)="\$DEPS/([^"]+)"', text)
    spec = offline.load()
    assert list(spec.variables.items()) == exports
    assert f'export CMAKE_ARGS="{spec.cmake_args}"' in text


def make_deps(root: Path) -> Path:
    deps = root / ".deps"
    for rel in offline.load().variables.values():
        (deps / rel).mkdir(parents=True)
    return deps


def test_all_present(tmp_path: Path) -> None:
    deps = make_deps(tmp_path)
    assert offline.check_deps(deps) == []
    offline.require_deps(deps)
    env = offline.deps_env(deps)
    assert env["TRITON_KERNELS_SRC_DIR"].endswith("triton_kernels-src/python/triton_kernels/triton_kernels")
    assert all(Path(v).is_dir() for k, v in env.items() if k.endswith("_SRC_DIR"))


def test_missing_dirs_listed_and_triton_level_explained(tmp_path: Path) -> None:
    deps = make_deps(tmp_path)
    (deps / "qutlass-src").rmdir()
    inner = deps / "triton_kernels-src/python/triton_kernels/triton_kernels"
    inner.rmdir()  # only the outer checkout: the guide 8 MLIR mistake
    problems = offline.check_deps(deps)
    assert len(problems) == 2
    assert any(p.startswith("QUTLASS_SRC_DIR") for p in problems)
    triton = next(p for p in problems if p.startswith("TRITON_KERNELS_SRC_DIR"))
    assert "MLIR" in triton and "inner" in triton
    with pytest.raises(InputError, match="QUTLASS_SRC_DIR"):
        offline.require_deps(deps)


def test_deps_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        offline.require_deps(tmp_path / "nope")


def test_unreachable_github_stops_with_the_variable_list() -> None:
    calls = []

    def probe(host: str, port: int, timeout: float) -> bool:
        calls.append((host, port, timeout))
        return False

    with pytest.raises(ConfigError) as err:
        offline.preflight_network(2.0, probe=probe)
    assert calls == [("github.com", 443, 2.0)]
    msg = err.value.render()
    for name in offline.load().variables:
        assert name in msg
    assert "CMAKE_ARGS" in msg and "--deps" in msg


def test_reachable_github_passes() -> None:
    offline.preflight_network(1.0, probe=lambda h, p, t: True)


def test_reachable_uses_a_real_socket_with_timeout() -> None:
    # port 9 on localhost: nothing listens, connection refused immediately -> False, no process started
    assert offline.reachable("127.0.0.1", 9, 0.5) is False


@pytest.mark.network
def test_probe_says_yes_for_a_reachable_host() -> None:
    """The network-marked tests have PyPI, so the same probe must succeed there (it is not always False)."""
    assert offline.reachable("pypi.org", 443, 5.0) is True
