"""``--ray`` / ``--ray-address`` and the stage split of the Ray executor (unit tests: no Ray started)."""

from __future__ import annotations

import argparse
import os

import pytest

from ocrstack.core.errors import UsageError
from ocrstack.parsing.stages import STAGES
from ocrstack.scaleout import options as ray_options
from ocrstack.scaleout.workers import LAYOUT_STAGES, RECOGNITION_STAGES


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("inputs", nargs="*")
    ray_options.add_arguments(p)
    return p.parse_args(argv)


def test_ray_flag_alone_means_a_local_ray() -> None:
    assert ray_options.from_args(_parse(["in.pdf", "--ray"])).address == "local"


def test_ray_flag_absent_means_no_ray() -> None:
    assert ray_options.from_args(_parse(["in.pdf"])).address is None


def test_ray_flag_before_the_input_takes_no_value() -> None:
    """Issue 23: ``parse --ray doc.pdf`` used to read doc.pdf as the address."""
    args = _parse(["--ray", "doc.pdf"])
    assert args.inputs == ["doc.pdf"]
    assert ray_options.from_args(args).address == "local"


@pytest.mark.parametrize("address", ["auto", "127.0.0.1:6379", "ray://head.ray.svc:10001"])
def test_ray_addresses_ray_address_accepts(address: str) -> None:
    args = _parse(["--ray-address", address, "in.pdf"])
    assert args.inputs == ["in.pdf"]
    assert ray_options.from_args(args).address == address


def test_ray_pool_ttl_default_zero_and_negative(capsys) -> None:
    assert ray_options.from_args(_parse(["in.pdf", "--ray-address", "auto"])).ray_pool_ttl == 300.0
    assert ray_options.from_args(_parse(["--ray-pool-ttl", "0", "in.pdf"])).ray_pool_ttl == 0.0
    with pytest.raises(UsageError, match="--ray-pool-ttl"):
        ray_options.from_args(_parse(["--ray-pool-ttl", "-1", "in.pdf"]))


class _Reached(BaseException):
    """Raised by the stubbed pipeline: the command got as far as running it."""


def test_ray_pool_ttl_reaches_the_executor_of_parse_and_api_serve(monkeypatch, tmp_path) -> None:
    """``parse`` and ``api serve`` hand ``--ray-pool-ttl`` to :class:`RayExecutor` (nothing is run)."""
    pytest.importorskip("ray", reason="ray is not installed (pip install 'ocrstack[ray]')")
    pytest.importorskip("fastapi", reason="the api extra is not installed")
    from ocrstack.api.app import _executor_factory
    from ocrstack.cli import main
    from ocrstack.parsing.run import pipeline
    from ocrstack.scaleout import executor

    made = []
    real = executor.RayExecutor.__init__

    def spy(self, *a, **kw):
        real(self, *a, **kw)
        made.append(self)

    def stop(*_a, **_kw):
        raise _Reached

    monkeypatch.setattr(executor.RayExecutor, "__init__", spy)
    monkeypatch.setattr(pipeline, "run", stop)
    factory = _executor_factory("127.0.0.1:1", 7.0)
    assert factory is not None and factory().pool_ttl == 7.0
    pdf = tmp_path / "in.pdf"
    pdf.write_bytes(b"%PDF-1.4")
    with pytest.raises(_Reached):
        main(["parse", str(pdf), "--ray-address", "127.0.0.1:1", "--ray-pool-ttl", "12"])
    assert [e.pool_ttl for e in made] == [7.0, 12.0]


def test_a_file_given_as_the_address_fails_with_the_fix() -> None:
    with pytest.raises(UsageError) as err:
        ray_options.from_args(_parse(["--ray-address", "in.pdf"]))
    assert "not a Ray address" in err.value.message
    assert "--ray alone" in (err.value.remedy or "")


def test_ray_and_ray_address_are_one_or_the_other(capsys) -> None:
    with pytest.raises(SystemExit) as err:
        _parse(["in.pdf", "--ray", "--ray-address", "auto"])
    assert err.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize("old", ["auto", "127.0.0.1:6379", "ray://head.ray.svc:10001"])
def test_the_old_spelling_with_an_address_names_ray_address(old: str, tmp_path) -> None:
    """``--ray ADDRESS IN`` (before issue 23): ADDRESS is now an input; one line names the fix."""
    from pathlib import Path

    pdf = tmp_path / "in.pdf"
    pdf.write_bytes(b"%PDF-1.4")
    args = _parse(["--ray", old, str(pdf)])
    with pytest.raises(UsageError) as err:
        ray_options.check_inputs(ray_options.from_args(args), [Path(p) for p in args.inputs])
    assert "--ray takes no address" in err.value.message and "\n" not in err.value.render()
    assert f"--ray-address {old}" in (err.value.remedy or "")


def test_an_existing_input_named_like_an_address_is_an_input(tmp_path, monkeypatch) -> None:
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    Path("auto").mkdir()  # a directory called auto: parse it on a local Ray
    args = _parse(["--ray", "auto"])
    ray_options.check_inputs(ray_options.from_args(args), [Path(p) for p in args.inputs])


def test_the_cli_refuses_the_old_spelling_before_any_work(tmp_path, capsys) -> None:
    from ocrstack.cli import main

    pdf = tmp_path / "in.pdf"
    pdf.write_bytes(b"%PDF-1.4")
    assert main(["parse", "--ray", "127.0.0.1:6379", str(pdf), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--ray-address 127.0.0.1:6379" in err
    assert not (tmp_path / "out").exists()


def test_stage_split_covers_every_page_stage_once_in_order() -> None:
    assert LAYOUT_STAGES + RECOGNITION_STAGES == STAGES
    names = [s.name for s in LAYOUT_STAGES], [s.name for s in RECOGNITION_STAGES]
    assert names[1][0] == "recognise" and "layout" in names[0]


def test_unreachable_cluster_address_fails_in_seconds() -> None:
    import socket

    from ocrstack.core.errors import ServerUnreachable
    from ocrstack.scaleout.session import check_reachable as _check_reachable

    with socket.socket() as s:  # a port where nothing listens once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServerUnreachable) as err:
        _check_reachable(f"127.0.0.1:{port}")
    assert f"--ray-address 127.0.0.1:{port}" in err.value.message
    with pytest.raises(ServerUnreachable):
        _check_reachable(f"ray://127.0.0.1:{port}")


@pytest.mark.parametrize(("cpus", "actors"), [(1, 1), (2, 1), (4, 3), (10, 8), (64, 48)])
def test_layout_pool_leaves_cpus_for_rendering(cpus: int, actors: int) -> None:
    from ocrstack.scaleout.executor import default_layout_actors

    assert default_layout_actors(cpus) == actors


def test_ray_missing_is_a_config_error_before_any_page(monkeypatch) -> None:
    """Without the ray package, --ray fails with exit 9 and the install line, not a traceback."""
    import importlib.util

    import pytest

    from ocrstack.core.errors import ConfigError
    from ocrstack.scaleout import RayExecutor

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    with pytest.raises(ConfigError, match="needs the ray package") as info:
        RayExecutor()
    assert info.value.exit_code == 9 and "ocrstack[ray]" in str(info.value)


def test_ray_env_kept_restores_what_a_local_ray_changed(monkeypatch) -> None:
    """What a local ``ray.init`` does to the process (sets RAY_AUTH_MODE=token) is undone after it."""
    pytest.importorskip("ray", reason="ray is not installed (pip install 'ocrstack[ray]')")
    from ocrstack.scaleout.session import ray_env_kept

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "1")
    with ray_env_kept():
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    assert "RAY_AUTH_MODE" not in os.environ
    assert os.environ["RAY_USAGE_STATS_ENABLED"] == "1"
