"""``ocrstack preflight``: the guide's pre-install checks (guide 2) as one report.

Reads ``nvidia-smi`` (GPU name, memory total/used, driver; compute processes), free
disk space (``shutil.disk_usage``, the same statvfs numbers as ``df``), the Python of
each environment (pixi envs in ``.pixi/envs`` or the guide's venvs) and the CUDA its
torch was built for, and -- when a CUDA toolchain is present -- whether nvcc accepts
the host gcc (delegated to :mod:`ocrstack.toolchain` when that check is available), and
the kit's own consistency (:mod:`ocrstack.preflight.deployment`: vLLM vs transformers pins,
main model and DSpark draft from one release, one served model name for serve and parse).

Thresholds come from ``envs/versions.yaml`` ``hardware`` (driver >= 580, 535-579 only the
cu126 self-build, VRAM >= 24 GB, disk >= 20 GB). No GPU on this machine is reported as
not-run (guide 10: report only what was checked), not as a failure, unless
``require_gpu`` is set. Either way the preflight did not pass: a required check that could not
run makes the report not ``ok`` (:class:`~ocrstack.preflight.checks.PreflightReport`) and the CLI
prints the whole report, then exits 1 naming what could not be checked.
"""

from __future__ import annotations

from ocrstack.preflight.checks import PreflightReport, Thresholds, evaluate
from ocrstack.preflight.facts import Facts, Runner, default_runner, gather
from ocrstack.preflight.options import PreflightOptions

__all__ = ["Facts", "PreflightOptions", "PreflightReport", "Thresholds", "evaluate", "gather", "run"]


def run(options: PreflightOptions, runner: Runner = default_runner) -> PreflightReport:
    """Gather facts and judge them; returns the report whatever it says (the CLI decides the exit code)."""
    pythons = dict(options.pythons)
    facts = gather(root=options.root, disk_path=options.disk_path, pythons=pythons, runner=runner)
    report = evaluate(facts, require_gpu=options.require_gpu)
    from ocrstack.preflight.toolchain import toolchain_checks

    for check in toolchain_checks(runner, python=pythons.get("vllm-build")):
        report.add(check)
    from ocrstack.preflight.deployment import deployment_checks

    for check in deployment_checks(facts.envs):  # issue 14: pins and data files agree
        report.add(check)
    return report
