"""``ocrstack fetch models``: main model + DSpark draft into ./models/NAME, then the guide 3.4 checks."""

from __future__ import annotations

import time
from pathlib import Path

from ocrstack.core.errors import UsageError
from ocrstack.core.results import Report
from ocrstack.fetch import catalog, hub
from ocrstack.fetch.options import ModelFetchOptions
from ocrstack.fetch.verify import PROVENANCE, bad_reason, verify_models, write_json_atomic


def _remove_if_empty(target: Path) -> None:
    """Remove ``target`` when it holds no file (empty folders only, e.g. the hub's ``.cache``).

    Any file kept (a partial download the hub can resume) keeps the whole directory.
    """
    if any(p.is_file() for p in target.rglob("*")):
        return
    for d in sorted((p for p in target.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        d.rmdir()
    target.rmdir()


def fetch_models(opts: ModelFetchOptions) -> Report:
    """Download (unless ``check_only``) and verify; returns the checks report.

    Each model goes to ``dest/NAME``; a provenance file records repo, source, endpoint,
    revision and commit. Existing files are kept (the hub libraries resume and skip
    complete files). A failed check marks the directory bad; nothing is deleted. A download
    that fails before writing any file leaves no empty ``dest/NAME`` behind.
    """
    specs = [catalog.model(n) for n in opts.names]
    overrides = dict(opts.repo_overrides)
    if opts.source == "modelscope" and not opts.check_only:
        missing = [s.name for s in specs if s.name not in overrides]
        if missing:
            # guide 3.4 writes the ModelScope id as a placeholder (<MS_REPO_ID>): ask, do not guess
            raise UsageError(
                f"no ModelScope repo id for {', '.join(missing)} (guide 3.4 gives only <MS_REPO_ID>)",
                "pass --repo NAME=MODELSCOPE_ID for each model",
            )
    for spec in specs:
        target = opts.dest / spec.name
        if opts.check_only:
            continue
        created = not target.exists()
        target.mkdir(parents=True, exist_ok=True)
        repo = overrides.get(spec.name, spec.repo)
        try:
            if opts.source == "modelscope":
                commit = hub.snapshot_modelscope(repo, target, revision=opts.revision)
            else:
                commit = hub.snapshot_hf(repo, target, endpoint=opts.endpoint, revision=opts.revision)
        except BaseException:
            if created:
                _remove_if_empty(target)  # issue 10 item 9: no empty models/NAME after a failure
            raise
        write_json_atomic(
            target / PROVENANCE,
            {
                "repo": repo,
                "source": opts.source,
                "endpoint": hub.hf_endpoint(opts.endpoint) if opts.source == "hf" else None,
                "revision": opts.revision,
                "commit": commit,
                "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        )
    main = next((s for s in specs if s.kind == "main"), None)
    draft = next((s for s in specs if s.kind == "draft"), None)
    if draft is not None and main is None and draft.main:
        main = catalog.model(draft.main)  # check the pairing against the main model already on disk
    report = verify_models(
        opts.dest / main.name if main else None, main, opts.dest / draft.name if draft else None, draft
    )
    for spec in (main, draft):
        if spec is not None:
            reason = bad_reason(opts.dest / spec.name)
            if reason:
                report.title += f"\n  {opts.dest / spec.name} marked bad ({reason}); nothing was deleted"
    return report
