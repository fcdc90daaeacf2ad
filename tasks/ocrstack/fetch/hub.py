"""Model downloads through huggingface_hub (``HF_ENDPOINT`` mirrors honoured) or ModelScope.

Downloads go into ``local_dir`` (``./models/NAME``); nothing is loaded from a hub at serve
time. Tokens are read by the hub libraries themselves (``HF_TOKEN``) and never logged.
"""

from __future__ import annotations

import os
from pathlib import Path

from ocrstack.core.errors import ConfigError, ServerRejected, ServerUnreachable, StepFailed


def hf_endpoint(explicit: str | None = None) -> str | None:
    """The hub endpoint: ``explicit``, else ``$HF_ENDPOINT`` (a mirror, guide 3.4), or None."""
    return explicit or os.environ.get("HF_ENDPOINT") or None


def downloaded_commit(local_dir: Path) -> str | None:
    """The commit huggingface_hub recorded in ``local_dir/.cache/huggingface/download/*.metadata``."""
    meta_dir = local_dir / ".cache" / "huggingface" / "download"
    for meta in sorted(meta_dir.rglob("*.metadata")) if meta_dir.is_dir() else []:
        try:
            first = meta.read_text(encoding="utf-8").splitlines()[0].strip()
        except (OSError, IndexError):
            continue
        if first:
            return first
    return None


def snapshot_hf(
    repo: str, local_dir: Path, *, endpoint: str | None = None, revision: str | None = None
) -> str | None:
    """``huggingface_hub.snapshot_download`` into ``local_dir``; returns the commit downloaded (if recorded).

    Raises:
        ServerRejected: repo / revision not found, gated, or another 4xx.
        ServerUnreachable: the hub (or mirror) cannot be reached.
        StepFailed: any other download error.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = hf_endpoint(endpoint) or "https://huggingface.co"
    try:
        snapshot_download(
            repo_id=repo, local_dir=str(local_dir), revision=revision, endpoint=hf_endpoint(endpoint)
        )
    except (RepositoryNotFoundError, RevisionNotFoundError, GatedRepoError) as exc:
        raise ServerRejected(
            f"{where}: {repo}@{revision or 'main'} not available ({type(exc).__name__})",
            "check the repo id / revision, log in for gated repos (HF_TOKEN), or use --source modelscope",
        ) from exc
    except LocalEntryNotFoundError as exc:
        raise ServerUnreachable(
            f"cannot reach {where} to download {repo}",
            "check the network, or set HF_ENDPOINT to a mirror (e.g. https://hf-mirror.com, guide 3.4)",
        ) from exc
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status is not None and 400 <= status < 500:
            raise ServerRejected(
                f"{where}: {repo}: HTTP {status}", "check the repo id and token", status=status
            ) from exc
        raise StepFailed(f"download of {repo} from {where} failed: {exc}", "rerun to resume") from exc
    except OSError as exc:
        raise StepFailed(
            f"download of {repo} into {local_dir} failed: {exc}", "check disk space and rerun"
        ) from exc
    return downloaded_commit(local_dir) or revision


def snapshot_modelscope(repo: str, local_dir: Path, *, revision: str | None = None) -> str | None:
    """ModelScope download (guide 3.4: ``modelscope download --model <MS_REPO_ID> --local_dir ...``).

    Raises:
        ConfigError: modelscope is not installed.
        StepFailed: the download failed.
    """
    try:
        from modelscope.hub.snapshot_download import snapshot_download
    except ImportError as exc:
        raise ConfigError(
            "modelscope is not installed", "pip install modelscope, or use --source hf"
        ) from exc
    try:
        kwargs = {"local_dir": str(local_dir)}
        if revision:
            kwargs["revision"] = revision
        snapshot_download(repo, **kwargs)
    except Exception as exc:  # modelscope raises plain exceptions for network and 404
        raise StepFailed(
            f"ModelScope download of {repo} failed: {exc}", "check the ModelScope repo id and rerun"
        ) from exc
    return revision
