"""Post-download checks for models and the layout directory (guide 3.4), and the "bad download" marker.

* Main model: the five files of guide 3.4 exist and are non-empty.
* DSpark draft: ``sha256(model.safetensors) == release_manifest.json["weight_sha256"]``
  (guide 3.4's ``sha256sum`` step).
* Same release (guide 3.4: "main model and draft must come from the same release; never mix
  checkpoints"): the manifest's ``weight_sha256`` is the only field the guide documents.
  When the manifest also records the main model's identity -- a sha256 under one of
  :data:`MAIN_SHA_KEYS`, or a release id under :data:`RELEASE_KEYS` that the main model's own
  ``release_manifest.json`` also carries -- it is compared; when it records none, the check
  is ``not-run`` with that reason (never reported as passed, guide 10).
* Layout: ``OCR_LAYOUT_MODEL_DIR`` must be a Paddle inference directory (``inference.pdiparams``,
  ``inference.json``, ``inference.yml``), not a safetensors directory (guide 3.4).

A failed check deletes nothing: it writes :data:`BAD_MARKER` (JSON with the reasons) into
the directory, which :func:`bad_reason` reports and servers can refuse; a later run whose
checks pass removes it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ocrstack.core.digest import sha256_file
from ocrstack.core.errors import ConfigError
from ocrstack.core.results import Check, Report, Status
from ocrstack.fetch.catalog import LayoutSpec, ModelSpec

BAD_MARKER = ".ocrstack-bad.json"
PROVENANCE = ".ocrstack-fetch.json"
MAIN_SHA_KEYS = ("main_weight_sha256", "target_weight_sha256", "base_weight_sha256", "main_model_sha256")
RELEASE_KEYS = ("release", "release_id", "release_tag")
LAYOUT_FILES = ("inference.pdiparams", "inference.json", "inference.yml")
LAYOUT_EXPLANATION = (
    "OCR_LAYOUT_MODEL_DIR must be a Paddle inference directory (inference.pdiparams, inference.json, "
    "inference.yml), not a safetensors directory (guide 3.4)"
)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to ``path`` through a temp file + ``os.replace``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    os.replace(tmp, path)


def mark_bad(directory: Path, reasons: list[str]) -> Path:
    """Write the bad-download marker (reasons + time) into ``directory``; returns its path."""
    marker = directory / BAD_MARKER
    write_json_atomic(
        marker, {"reasons": reasons, "marked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    )
    return marker


def clear_bad(directory: Path) -> bool:
    """Remove the marker; True when one was there."""
    marker = directory / BAD_MARKER
    if marker.exists():
        marker.unlink()
        return True
    return False


def bad_reason(directory: Path) -> str | None:
    """The reasons recorded in ``directory``'s marker joined by '; ', or None when it is not marked bad."""
    marker = directory / BAD_MARKER
    if not marker.is_file():
        return None
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
        return "; ".join(data.get("reasons", [])) or "marked bad"
    except (OSError, json.JSONDecodeError):
        return "marked bad (unreadable marker)"


def check_required(directory: Path, required: tuple[str, ...], label: str) -> Check:
    """All ``required`` files exist and are non-empty in ``directory``."""
    if not directory.is_dir():
        return Check(
            f"{label}:files", Status.FAIL, f"{directory} does not exist", "download it: ocrstack fetch models"
        )
    missing = [f for f in required if not (directory / f).is_file() or (directory / f).stat().st_size == 0]
    if missing:
        return Check(
            f"{label}:files",
            Status.FAIL,
            f"{directory}: missing or empty {', '.join(missing)}",
            "rerun `ocrstack fetch models` (downloads resume) or copy the files from the release (guide 3.4)",
            expected=", ".join(required),
        )
    return Check(f"{label}:files", Status.PASS, f"{directory}: {', '.join(required)} present")


def read_manifest(path: Path) -> dict[str, Any] | None:
    """Parse a release manifest; None when absent or not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _find(data: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, str] | None:
    """First ``(key, value)`` for any of ``keys`` at the top level or one level down."""
    for k in keys:
        if isinstance(data.get(k), str):
            return k, data[k]
    for v in data.values():
        if isinstance(v, dict):
            for k in keys:
                if isinstance(v.get(k), str):
                    return k, v[k]
    return None


def check_draft(draft_dir: Path, spec: ModelSpec, main_dir: Path | None) -> list[Check]:
    """The DSpark draft's weight sha256 and its release relation to ``main_dir`` (guide 3.4)."""
    label = spec.name
    manifest_path = draft_dir / (spec.manifest or "release_manifest.json")
    weights = draft_dir / (spec.weights or "model.safetensors")
    manifest = read_manifest(manifest_path)
    out: list[Check] = []
    if manifest is None or not isinstance(manifest.get("weight_sha256"), str):
        out.append(
            Check(
                f"{label}:sha256",
                Status.FAIL,
                f"{manifest_path}: missing, not JSON, or no weight_sha256",
                "download the draft again from the same release (guide 3.4)",
            )
        )
    elif not weights.is_file():
        out.append(Check(f"{label}:sha256", Status.FAIL, f"{weights} missing", "download the draft again"))
    else:
        want = manifest["weight_sha256"].lower()
        got = sha256_file(weights)
        ok = got == want
        out.append(
            Check(
                f"{label}:sha256",
                Status.PASS if ok else Status.FAIL,
                f"sha256({weights.name}) {'matches' if ok else 'differs from'} "
                "release_manifest.json weight_sha256",
                ""
                if ok
                else "the draft weights are corrupt or from another release: download both models again "
                "from one release (guide 3.4)",
                expected=want,
                found=got,
            )
        )
    out.append(check_same_release(manifest, main_dir, label))
    return out


def check_same_release(manifest: dict[str, Any] | None, main_dir: Path | None, label: str) -> Check:
    """Compare the draft manifest's record of the main model with ``main_dir`` when it has one."""
    name = f"{label}:same-release"
    if main_dir is None or not main_dir.is_dir():
        return Check(name, Status.NOT_RUN, "main model directory not present; release pairing not checked")
    if manifest is None:
        return Check(name, Status.NOT_RUN, "no readable release_manifest.json in the draft")
    main_sha = _find(manifest, MAIN_SHA_KEYS)
    if main_sha is not None:
        weights = main_dir / "model.safetensors"
        if not weights.is_file():
            return Check(name, Status.FAIL, f"{weights} missing", "download the main model again (guide 3.4)")
        got = sha256_file(weights)
        ok = got == main_sha[1].lower()
        return Check(
            name,
            Status.PASS if ok else Status.FAIL,
            f"main model sha256 {'matches' if ok else 'differs from'} the draft manifest's {main_sha[0]}",
            ""
            if ok
            else "the main model and the DSpark draft come from different releases; download both "
            "from the same release, never mix checkpoints (guide 3.4)",
            expected=main_sha[1].lower(),
            found=got,
        )
    release = _find(manifest, RELEASE_KEYS)
    main_manifest = read_manifest(main_dir / "release_manifest.json")
    if release is not None and main_manifest is not None:
        other = _find(main_manifest, (release[0],))
        if other is not None:
            ok = other[1] == release[1]
            return Check(
                name,
                Status.PASS if ok else Status.FAIL,
                f"draft {release[0]}={release[1]!r}, main {other[0]}={other[1]!r}",
                "" if ok else "download both models from the same release (guide 3.4)",
                expected=release[1],
                found=other[1],
            )
    return Check(
        name,
        Status.NOT_RUN,
        "release_manifest.json records no main-model identity "
        f"({'/'.join(MAIN_SHA_KEYS + RELEASE_KEYS)}); same release cannot be proven from the files",
        "download both from the same release as the guide says (guide 3.4)",
    )


def verify_models(
    main_dir: Path | None,
    main: ModelSpec | None,
    draft_dir: Path | None,
    draft: ModelSpec | None,
    *,
    mark: bool = True,
) -> Report:
    """Run the post-download checks; on failure mark the affected directories bad (nothing deleted)."""
    report = Report("fetch: model checks (guide 3.4)")
    main_checks: list[Check] = []
    draft_checks: list[Check] = []
    if main is not None and main_dir is not None:
        main_checks.append(report.add(check_required(main_dir, main.required, main.name)))
    if draft is not None and draft_dir is not None:
        draft_checks.append(report.add(check_required(draft_dir, draft.required, draft.name)))
        if draft_checks[0].status is Status.PASS:
            for c in check_draft(draft_dir, draft, main_dir):
                draft_checks.append(report.add(c))
    if mark:
        _apply_marker(
            main_dir, [c for c in main_checks + draft_checks if c.name.endswith("same-release")] + main_checks
        )
        _apply_marker(draft_dir, draft_checks)
    return report


def _apply_marker(directory: Path | None, checks: list[Check]) -> None:
    if directory is None or not directory.is_dir() or not checks:
        return
    failed = [f"{c.name}: {c.detail}" for c in checks if c.status is Status.FAIL]
    if failed:
        mark_bad(directory, failed)
    else:
        clear_bad(directory)


def check_layout_dir(directory: Path, spec: LayoutSpec | None = None) -> Check:
    """``directory`` is a Paddle inference dir: inference.pdiparams/.json/.yml (guide 3.4)."""
    required = spec.required if spec else LAYOUT_FILES
    if not directory.is_dir():
        return Check("layout:dir", Status.FAIL, f"{directory} does not exist", "ocrstack fetch layout")
    missing = [f for f in required if not (directory / f).is_file()]
    if not missing:
        return Check("layout:dir", Status.PASS, f"{directory}: {', '.join(required)} present")
    if any(directory.glob("*.safetensors")) or (directory / "config.json").is_file():
        return Check(
            "layout:dir",
            Status.FAIL,
            f"{directory} is a safetensors (Hugging Face) directory",
            LAYOUT_EXPLANATION + "; fetch it with: ocrstack fetch layout",
        )
    return Check(
        "layout:dir",
        Status.FAIL,
        f"{directory}: missing {', '.join(missing)}",
        LAYOUT_EXPLANATION + "; fetch it with: ocrstack fetch layout",
    )


def require_layout_dir(directory: Path) -> Path:
    """Return ``directory`` when it is a Paddle inference dir.

    Raises:
        ConfigError: it is missing, incomplete, or a safetensors directory (message explains guide 3.4).
    """
    c = check_layout_dir(directory)
    if c.status is not Status.PASS:
        raise ConfigError(f"{c.detail}", c.fix)
    return directory
