"""``ocrstack build mineru-diffusion``: the SGLang fork that serves MinerU-Diffusion (issue 14).

Source: opendatalab/MinerU-Diffusion at ``mineru-diffusion.repo-commit`` (envs/versions.yaml):
``docs/sglang/README.md`` "Environment" installs SGLang from a checkout with
``pip install -e "python[all]"``; README "Environment Setup" uses Python 3.12. Upstream SGLang
cannot load the model (MinerU-Diffusion issue 8; SDAR support reverted, sgl-project/sglang#19032),
so the checkout is the fork the maintainers name in issue 10 (``mineru-diffusion.sglang-fork``),
pinned to ``mineru-diffusion.sglang-fork-commit``. The fork's ``python/pyproject.toml`` pins torch
and transformers itself; the versions check then asserts them.

Steps: ``sglang-fork`` (editable install with ``[all]``; done when sglang's version carries the
pinned commit and torch/transformers are the fork's pins) -> ``versions-check``
(``--env mineru-diffusion``) -> ``mineru-diffusion-known`` (the fork's MinerU-Diffusion config and
model modules import). The plan is pure; :func:`build_mineru` runs the read-only checks (checkout
at the pinned commit and really the fork, target interpreter) and then the shared runner.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ocrstack import versions
from ocrstack.building import runner, target
from ocrstack.building.options import MineruOptions
from ocrstack.building.sources import commit_matches, head_commit
from ocrstack.building.steps import (
    DistCondition,
    DoneCheck,
    Plan,
    Step,
    pip_install,
    target_line,
    versions_check_step,
)
from ocrstack.core.errors import InputError
from ocrstack.core.results import Check, Report, Status

ENV = "mineru-diffusion"
#: Files that only the fork has (python/sglang/srt/... at the pinned commit): proof it is not upstream.
FORK_MARKERS = (
    "python/pyproject.toml",
    "python/sglang/srt/models/mineru_diffusion.py",
    "python/sglang/srt/configs/mineru_diffusion.py",
)
#: Imported by the last step: the fork's MinerU-Diffusion config and model (SGLang registers them).
KNOWN_MODULES = "sglang.srt.configs.mineru_diffusion, sglang.srt.models.mineru_diffusion"


def mineru_plan(opts: MineruOptions) -> Plan:
    """The MinerU-Diffusion SGLang plan (module docstring); pure, every version from versions.yaml."""
    py = str(opts.python)
    m = versions.pin("mineru-diffusion")
    commit = str(m["sglang-fork-commit"])
    steps = (
        Step(
            "sglang-fork",
            f'SGLang fork -e "python[all]" (MinerU-Diffusion docs/sglang/README.md; fork pins '
            f"torch {m['torch']}, transformers {m['transformers']})",
            pip_install(py, "-e", f"{opts.sglang_src}/python[all]"),
            done=DoneCheck(
                (
                    DistCondition("sglang", "contains", commit[:7]),
                    DistCondition("torch", "spec", f"=={m['torch']}"),
                    DistCondition("transformers", "spec", f"=={m['transformers']}"),
                )
            ),
        ),
        versions_check_step(py, ENV, "for the MinerU-Diffusion SGLang environment (issue 14)"),
        Step(
            "mineru-diffusion-known",
            "the fork's MinerU-Diffusion config and model import (upstream SGLang lacks them: issue 8)",
            (py, "-c", f"import {KNOWN_MODULES}"),
        ),
    )
    preflight = (
        f"SGLang checkout {opts.sglang_src} is the fork {m['sglang-fork']} ({', '.join(FORK_MARKERS[1:])}) "
        f"at pinned commit {commit} (--allow-other-commit to override)",
        target_line(py, ENV),
    )
    notes = (
        "a checkout without git tags installs as sglang 0.0.0.dev0 and fails the version check: "
        "git fetch --tags",
        "then: ocrstack serve --profile mineru-diffusion (or mineru-diffusion-safe)",
        f"logs: {opts.log_dir}/NN-<step>.log",
    )
    return Plan(f"MinerU-Diffusion SGLang fork (issue 14, {m['repo']})", py, steps, preflight, notes)


def check_fork(src: Path, allow_other_commit: bool) -> Check:
    """The checkout exists, is the fork (its MinerU-Diffusion files) and sits at the pinned commit.

    Raises:
        InputError: ``src`` missing, not an SGLang checkout, or upstream SGLang (no MinerU files).
    """
    pinned = str(versions.pin("mineru-diffusion.sglang-fork-commit"))
    fork = str(versions.pin("mineru-diffusion.sglang-fork"))
    clone = f"git clone {fork} && git -C sglang checkout {pinned}"
    if not src.is_dir():
        raise InputError(f"{src}: SGLang source directory not found", clone)
    if not (src / FORK_MARKERS[0]).is_file():
        raise InputError(
            f"{src}: no {FORK_MARKERS[0]}; not an SGLang checkout", f"pass the checkout root ({clone})"
        )
    missing = [m for m in FORK_MARKERS[1:] if not (src / m).is_file()]
    if missing:
        raise InputError(
            f"{src}: no {', '.join(missing)}: this is upstream SGLang, which cannot serve MinerU-Diffusion "
            "(MinerU-Diffusion issue 8; sgl-project/sglang#19032)",
            clone,
        )
    head = head_commit(src)
    fix = f"git -C {src} checkout {pinned}   (or --allow-other-commit)"
    status = Status.WARN if allow_other_commit else Status.FAIL
    if head is None:
        return Check(
            "sglang-commit", status, f"{src} is not a git checkout; cannot verify {pinned}", fix, pinned
        )
    if commit_matches(head, pinned):
        return Check("sglang-commit", Status.PASS, f"{src} at {head[:12]}", expected=pinned, found=head)
    return Check(
        "sglang-commit",
        status,
        f"{src} is at {head[:12]}, pinned {pinned}",
        "" if allow_other_commit else fix,
        pinned,
        head,
    )


def build_mineru(opts: MineruOptions, as_json: bool = False) -> int:
    """Print the plan, run the read-only checks (also with ``--dry-run``), then the runner. Returns 0.

    Raises:
        InputError / CheckFailed: the checkout is missing, upstream SGLang, or at another commit.
        ConfigError: wrong target interpreter (``--allow-other-python`` overrides).
        StepFailed: a step failed (the doctor's diagnosis was printed).
    """
    p = mineru_plan(opts)
    if opts.dry_run:
        print(p.to_json() if as_json else p.render(), flush=True)
    else:
        print(p.render(), file=sys.stderr)
    report = Report("SGLang fork checkout (pin: mineru-diffusion.sglang-fork-commit)")
    report.add(check_fork(opts.sglang_src, opts.allow_other_commit))
    print(report.to_text(), file=sys.stderr)
    report.raise_if_failed("source check")
    target.require_target(opts.python, ENV, opts.allow_other_python)
    if opts.dry_run:
        return 0
    runner.run_plan(p, opts.log_dir)
    print(f"SGLang fork installed from {opts.sglang_src}; logs in {opts.log_dir}", file=sys.stderr)
    return 0
