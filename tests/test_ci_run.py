""".ci/run: the offline suite with the slowest tests listed, then the network step on its own."""

from __future__ import annotations

from pathlib import Path


def _commands(repo: Path) -> list[str]:
    lines = (repo / ".ci" / "run").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def test_the_suite_prints_its_25_slowest_tests(repo: Path) -> None:
    assert any(c.startswith("bash scripts/test --durations=25") for c in _commands(repo))


def test_the_network_tests_are_their_own_step_with_the_venvs_python(repo: Path) -> None:
    (step,) = [c for c in _commands(repo) if "-m network" in c and not c.startswith("echo")]
    assert step.startswith(".venv-dev/bin/python -m pytest -m network ")
    assert "tests/" not in step  # every network test: engine parsers (nox -s engines) and pip/CUDA wheels


def test_the_heavy_suites_are_their_own_step_on_every_core(repo: Path) -> None:
    (step,) = [c for c in _commands(repo) if "-m heavy" in c and not c.startswith("echo")]
    assert step.startswith(".venv-dev/bin/python -m pytest -n auto --dist loadgroup -m heavy ")
    assert "tests/" not in step  # every heavy test, wherever it lives


def test_the_security_table_is_its_own_step_and_counts_in_the_exit_code(repo: Path) -> None:
    commands = _commands(repo)
    (step,) = [c for c in commands if c.startswith(".venv-dev/bin/python -m ocrstack api security")]
    assert step.endswith("|| security=$?")
    assert any(c.startswith("exit ") and "security" in c for c in commands)


def test_the_readme_names_every_command_ci_runs(repo: Path) -> None:
    """CI runs what the README says: each step's command (its exit-code capture left out) and the
    exit line appear verbatim in README.md."""
    readme = (repo / "README.md").read_text(encoding="utf-8")
    steps = [
        c.split(" || ")[0]
        for c in _commands(repo)
        if c.startswith(("bash scripts/test", ".venv-dev/bin/python", "exit "))
    ]
    assert len(steps) == 5, steps
    assert [s for s in steps if s not in readme] == []
