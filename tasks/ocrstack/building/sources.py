"""Source checkouts: pinned commits (guide 2, 9) and the local patch set (``patches/``).

``check_sources`` compares ``git rev-parse HEAD`` of the vLLM and transformers
checkouts with ``vllm.fork-commit`` / ``transformers.fork-commit`` in envs/versions.yaml.
A mismatch fails unless ``allow_other_commit`` (then it is a warning). Patches are
``patches/<project>/*.patch`` applied in name order, each checked with
``git apply --check`` before any is applied (see patches/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ocrstack import versions
from ocrstack.core import proc
from ocrstack.core.errors import InputError
from ocrstack.core.results import Check, Report, Status

#: project name -> (versions.yaml pin of its commit, a file that must exist in the checkout)
PROJECTS = {
    "vllm": ("vllm.fork-commit", "setup.py"),
    "transformers": ("transformers.fork-commit", "setup.py"),
}


@dataclass(frozen=True)
class Patch:
    """One patch file for ``project`` (``vllm`` or ``transformers``)."""

    project: str
    path: Path

    @property
    def name(self) -> str:
        """``project/file.patch``."""
        return f"{self.project}/{self.path.name}"


def list_patches(patches_dir: Path) -> list[Patch]:
    """Return ``patches_dir/<project>/*.patch`` for known projects, vLLM first, names sorted.

    Raises:
        InputError: a subdirectory names an unknown project (a typo would silently skip patches).
    """
    if not patches_dir.is_dir():
        return []
    out: list[Patch] = []
    for sub in sorted(p for p in patches_dir.iterdir() if p.is_dir()):
        if sub.name not in PROJECTS:
            raise InputError(
                f"{sub}: unknown patch project '{sub.name}'",
                f"use one of {', '.join(PROJECTS)} (patches/README.md)",
            )
    for project in PROJECTS:
        d = patches_dir / project
        if d.is_dir():
            out += [Patch(project, p) for p in sorted(d.glob("*.patch"))]
    return out


def head_commit(src: Path) -> str | None:
    """Full ``HEAD`` sha of the git checkout at ``src``, or None when it is not a git checkout."""
    done = proc.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture=True, check=False, echo=False)
    return done.stdout.strip() if done.returncode == 0 else None


def commit_matches(head: str, pinned: str) -> bool:
    """True when ``head`` (full sha) starts with the pinned (abbreviated) sha, case-insensitive."""
    return len(pinned) >= 7 and head.lower().startswith(pinned.lower())


def check_source(project: str, src: Path, allow_other_commit: bool) -> Check:
    """Check one checkout: exists, looks like the project, at the pinned commit.

    Raises:
        InputError: ``src`` does not exist or lacks the project's marker file.
    """
    pin_key, marker = PROJECTS[project]
    pinned = str(versions.pin(pin_key))
    if not src.is_dir():
        raise InputError(
            f"{src}: {project} source directory not found",
            f"clone the feat-ocr {project} and check out {pinned} (guide 2)",
        )
    if not (src / marker).is_file():
        raise InputError(f"{src}: no {marker}; not a {project} checkout", f"pass the {project} source root")
    head = head_commit(src)
    name = f"{project}-commit"
    fix = f"git -C {src} checkout {pinned}   (or --allow-other-commit to build it anyway)"
    if head is None:
        status = Status.WARN if allow_other_commit else Status.FAIL
        return Check(
            name, status, f"{src} is not a git checkout; cannot verify commit {pinned}", fix, pinned, None
        )
    if commit_matches(head, pinned):
        return Check(name, Status.PASS, f"{src} at {head[:12]}", expected=pinned, found=head)
    status = Status.WARN if allow_other_commit else Status.FAIL
    return Check(
        name,
        status,
        f"{src} is at {head[:12]}, pinned {pinned} (guide 2, 9)",
        "" if allow_other_commit else fix,
        pinned,
        head,
    )


def check_sources(vllm_src: Path, transformers_src: Path, allow_other_commit: bool = False) -> Report:
    """Report on both checkouts; ``report.ok`` is False on a commit mismatch unless allowed."""
    report = Report("source checkouts (pins: vllm.fork-commit, transformers.fork-commit)")
    report.add(check_source("vllm", vllm_src, allow_other_commit))
    report.add(check_source("transformers", transformers_src, allow_other_commit))
    return report
