"""nox sessions: thin wiring; logic lives in the ocrstack package (tasks/ocrstack/).

Every session installs from the committed lock (envs/lock/*.txt, exported from uv.lock).
"""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_venv = "yes"


def _install(session: nox.Session, lock: str) -> None:
    session.install("--require-hashes", "--no-deps", "-r", f"envs/lock/{lock}.txt")
    session.install("--no-deps", "-e", ".")


@nox.session
def tests(session: nox.Session) -> None:
    """Run the whole test suite (same as scripts/test)."""
    _install(session, "dev")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Lint the package and tests with ruff."""
    _install(session, "dev")
    session.run("ruff", "check", "tasks", "tests", "noxfile.py")
    session.run("ruff", "format", "--check", "tasks", "tests", "scripts", "noxfile.py")


@nox.session
def verify(session: nox.Session) -> None:
    """Guide 6/7 checks: tiny checkpoint in-process vs a real transformers serve, plus any passed after --."""
    _install(session, "dev")
    session.run("ocrstack", "verify", "--tiny", "--report-dir", ".ocrstack/verify", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks with their targets: overhead, scaling, peak RSS, embedded and born-digital peers."""
    _install(session, "bench")  # dev + pymupdf4llm and markitdown, the peers of issue 21
    session.run("ocrstack", "bench", *session.posargs)


@nox.session
def load(session: nox.Session) -> None:
    """API load/fault runs on 127.0.0.1, then the 1/2/3-replica PostgreSQL fault table (issue 23)."""
    _install(session, "dev")
    session.run("ocrstack", "api", "load", *session.posargs)
    session.run("ocrstack", "api", "replicas")


@nox.session
def heavy(session: nox.Session) -> None:
    """The heavy measurement suites the default run skips: corpus accuracy baseline, quick bench."""
    _install(session, "dev")
    xdist = ("-n", "auto", "--dist", "loadgroup")
    session.run("python", "-m", "pytest", *xdist, "-m", "heavy", *session.posargs)


@nox.session
def hostile(session: nox.Session) -> None:
    """The slow text rules timed on 10^6-character hostile runs (issue 25; ~13 min, not in CI)."""
    _install(session, "dev")
    session.run("python", "-m", "pytest", "-m", "hostile", *session.posargs)


@nox.session
def security(session: nox.Session) -> None:
    """The issue-25 attack table on 127.0.0.1: case, expected, observed, held/FAILED."""
    _install(session, "dev")
    session.run("ocrstack", "api", "security", *session.posargs)


@nox.session
def engines(session: nox.Session) -> None:
    """Serve profiles parsed by vLLM 0.33.0, SGLang and transformers serve (network; cached off-tree)."""
    _install(session, "dev")
    test = "tests/serving/test_profiles_engines.py"
    session.run("python", "-m", "pytest", "-m", "network", test, *session.posargs)


@nox.session
def extras(session: nox.Session) -> None:
    """Fresh venvs with no extra, only sdk, only api: the CLI starts in each (network; minutes)."""
    _install(session, "dev")
    session.run("python", "-m", "pytest", "-m", "network", "tests/test_extras_venv.py", *session.posargs)


@nox.session(name="lock-export")
def lock_export(session: nox.Session) -> None:
    """Re-export envs/lock/*.txt from uv.lock, and the conda specs when pixi is installed."""
    _install(session, "dev")
    session.run("ocrstack", "lock", "export")


@nox.session
def deploy(session: nox.Session) -> None:
    """hadolint, kubernetes-validate and CRD/compose schema checks on deploy/ (offline)."""
    _install(session, "dev")
    session.run("ocrstack", "deploy", "check", *session.posargs)


@nox.session
def hardpdfs(session: nox.Session) -> None:
    """Issue 22's hard-PDF batch (files cached in ~/.cache/ocrstack/hardpdfs), each with a timeout."""
    _install(session, "dev")
    session.run("ocrstack", "quality", "hardpdfs", "--fetch", *session.posargs)


@nox.session
def olmocr(session: nox.Session) -> None:
    """Issue 22's olmOCR-Bench sample table, scored by olmocr 0.4.27 in its own venv (envs/olmocr.txt)."""
    _install(session, "bench")  # dev + pymupdf4llm, a peer of the table
    scorer = f"{session.virtualenv.location}/olmocr-scorer"
    session.run("python", "-m", "venv", "--clear", scorer)
    pip = [f"{scorer}/bin/python", "-m", "pip", "install", "--require-hashes", "--no-deps"]
    session.run(*pip, "-r", "envs/olmocr.txt", external=True)
    session.run("ocrstack", "quality", "olmocr", "--scorer-python", f"{scorer}/bin/python", *session.posargs)
