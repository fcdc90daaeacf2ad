"""Options of ``ocrstack fetch models``, ``fetch check`` and ``fetch layout``, each declared once
(:mod:`ocrstack.core.options`).

``ocrstack.commands.fetch`` derives its flags from these classes and builds them from the parsed
flags; Python callers construct them directly with the same defaults. ``--name`` and ``--dest``
of ``fetch models`` and ``fetch check`` are one declaration each (:func:`_names`, :func:`_dest`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ocrstack.core import options as opt
from ocrstack.core.errors import UsageError

#: The main model and its DSpark draft (what ``fetch models`` and ``fetch check`` default to).
DEFAULT_NAMES = ("MiniCPM-OCR-1.0", "MiniCPM-OCR-1.0-DSpark")


def repo_override(item: str) -> tuple[str, str]:
    """Converter for ``--repo NAME=REPO``: ``(catalog name, repo id)``.

    Raises:
        UsageError: no ``=``, or an empty name or repo id.
    """
    k, sep, v = item.partition("=")
    if not sep or not k or not v:
        raise UsageError(
            f"--repo {item!r}: expected NAME=REPO", "e.g. --repo MiniCPM-OCR-1.0=OpenBMB/MiniCPM-OCR-1.0"
        )
    return k, v


def _names() -> Any:
    """``--name`` (repeatable): the catalog names, default :data:`DEFAULT_NAMES`."""
    return opt.option(
        DEFAULT_NAMES,
        flags=("--name",),
        many=True,
        help="catalog name (repeatable; default: main + draft)",
    )


def _dest() -> Any:
    """``--dest``: the parent directory of ``NAME/`` (guide 3.4: ``./models``)."""
    return opt.option(
        Path("models"), flags=("--dest",), convert=Path, help="parent directory (default: ./models)"
    )


@dataclass(frozen=True)
class ModelFetchOptions:
    """Options of ``ocrstack fetch models``.

    Attributes beyond the flags' help: ``source`` is ``hf`` (huggingface_hub) or ``modelscope``;
    ``repo_overrides`` are ``(name, repo id)`` pairs, e.g. ModelScope ids (guide 3.4
    ``<MS_REPO_ID>``); ``check_only`` does not download, it only runs the checks on what is there
    (``fetch check``).
    """

    names: tuple[str, ...] = _names()
    dest: Path = _dest()
    source: str = opt.option(
        "hf", flags=("--source",), choices=("hf", "modelscope"), metavar="{hf,modelscope}", help=""
    )
    endpoint: str | None = opt.option(
        None, flags=("--endpoint",), help="hub endpoint/mirror (default: $HF_ENDPOINT)"
    )
    revision: str | None = opt.option(
        None, flags=("--revision",), help="branch, tag or commit (default: main)"
    )
    repo_overrides: tuple[tuple[str, str], ...] = opt.option(
        (),
        flags=("--repo",),
        many=True,
        convert=repo_override,
        metavar="NAME=REPO",
        help="repo id override, e.g. a ModelScope id (repeatable)",
    )
    check_only: bool = False


@dataclass(frozen=True)
class CheckOptions:
    """Options of ``ocrstack fetch check``: the guide 3.4 checks on the models ``names`` already in
    ``dest`` (no download), and on ``layout_dir`` (an ``OCR_LAYOUT_MODEL_DIR``) when given."""

    names: tuple[str, ...] = _names()
    dest: Path = _dest()
    layout_dir: Path | None = opt.option(
        None, flags=("--layout-dir",), convert=Path, help="also check this OCR_LAYOUT_MODEL_DIR"
    )


@dataclass(frozen=True)
class LayoutFetchOptions:
    """Options of ``ocrstack fetch layout``.

    Attributes beyond the flags' help: ``name`` is the catalog entry (``PP-DocLayoutV3``);
    ``dest`` the parent directory of the extracted ``PP-DocLayoutV3_infer`` (guide 3.4: the
    working dir).
    """

    name: str = "PP-DocLayoutV3"
    dest: Path = opt.option(
        Path("."), flags=("--dest",), convert=Path, help="parent directory (default: current dir)"
    )
    url: str | None = opt.option(None, flags=("--url",), help="tarball URL override (mirror)")
    keep_tar: bool = opt.option(False, flags=("--keep-tar",), help="keep the tarball after extraction")
    retries: int = opt.option(
        5,
        flags=("--retries",),
        convert=int,
        example="5",
        help="retries for transient failures (4xx never retried)",
    )
