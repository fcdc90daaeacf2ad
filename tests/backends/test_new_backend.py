"""A new serving back-end is one module plus data (issue 20 item 1).

The throwaway back-end below is what such a module holds; registering it and writing a build
and a profile that use it is all it takes for ``serve --dry-run``, the doctor and load-aware
routing to know it. No other code changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from ocrstack import cli
from ocrstack.backends import profiles, registry
from ocrstack.backends.base import Backend, Gauges, Site
from ocrstack.client import routing
from ocrstack.core.errors import ConfigError
from ocrstack.doctor import diagnose, load_rules
from ocrstack.testing.fake_replies import metrics_text


class ToyServe(Backend):
    """The back-end module: its name, gauges, GPU need, build detection and doctor rules."""

    name: ClassVar[str] = "toyserve"
    python_env: ClassVar[bool] = False
    gauges: ClassVar[Gauges | None] = Gauges("toy:busy", "toy:queued", ("toy:kv",))

    def detect(self, site: Site) -> tuple[str | None, str]:
        return site.build, f"toyserve 0.1 for {site.program} (test double)"


@pytest.fixture
def toyserve(tmp_path: Path) -> Iterator[Path]:
    """Register the back-end (its rules file in tmp_path) and yield a profiles file that uses it."""
    rules = tmp_path / "toyserve_rules.yaml"
    rules.write_text(
        yaml.safe_dump(
            {
                "schema": 1,
                "rules": [
                    {
                        "id": "toyserve-out-of-toys",
                        "stage": "serve",
                        "regex": "ToyServe: out of toys",
                        "cause": "The toy server ran out of toys.",
                        "fix": "Give it more toys.",
                        "source": "tests/backends/test_new_backend.py",
                    }
                ],
            }
        )
    )
    backend = ToyServe()
    backend.rules_file = str(rules)  # absolute: used as is
    registry.register(backend)
    data = {
        "schema": 1,
        "builds": {"toy": {"engine": "toyserve", "description": "a toy server"}},
        "profiles": {
            "toy": {
                "build": "toy",
                "program": ["toy-server"],
                "args": [["--port", "${port}"], ["--max-toys", "3"]],
                "description": "the toy server",
            }
        },
    }
    path = tmp_path / "profiles.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    yield path
    registry.unregister("toyserve")


def test_serve_dry_run_plans_a_profile_of_the_new_backend(toyserve: Path, capsys) -> None:
    assert (
        cli.main(["serve", "--profile", "toy", "--profiles", str(toyserve), "--dry-run", "--port", "18777"])
        == 0
    )
    out = capsys.readouterr().out
    assert "toy-server --port 18777 --max-toys 3" in out
    assert "toyserve 0.1 for toy-server (test double)" in out  # its build detection ran
    assert profiles.load(toyserve).backend(profiles.load(toyserve).get("toy")) is registry.get("toyserve")


def test_the_doctor_knows_the_new_backends_rules(toyserve: Path) -> None:
    rule = next(r for r in load_rules() if r.id == "toyserve-out-of-toys")
    assert rule.backend == "toyserve" and rule.stage == "serve"
    assert [f.rule_id for f in diagnose("INFO start\nERROR ToyServe: out of toys\n")] == [
        "toyserve-out-of-toys"
    ]


def test_routing_reads_the_new_backends_gauges(toyserve: Path) -> None:
    load = routing.parse_load(metrics_text("toyserve", 2, 5, 0.25, "m"))
    assert load is not None and (load.engine, load.running, load.waiting, load.cache) == (
        "toyserve",
        2,
        5,
        0.25,
    )
    by_hand = "# TYPE toy:busy gauge\ntoy:busy 1\n# TYPE toy:queued gauge\ntoy:queued 4\n"
    assert routing.parse_load(by_hand) == routing.Load("toyserve", 1.0, 4.0, None)


def test_without_registration_the_engine_is_refused_with_the_known_names(toyserve: Path) -> None:
    registry.unregister("toyserve")
    with pytest.raises(ConfigError, match=r"builds\.toy\.engine: unknown engine 'toyserve'.*vllm, sglang"):
        profiles.load(toyserve)
    assert "toyserve-out-of-toys" not in {r.id for r in load_rules()}
