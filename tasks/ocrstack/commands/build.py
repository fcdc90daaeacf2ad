"""``ocrstack build vllm`` (source build, guide 3.2), ``build vllm-prebuilt`` (PyPI wheels) and
``build tf`` (the transformers environment with the feat-ocr fork, guide 3.3)."""

from __future__ import annotations

import argparse

from ocrstack.building.options import BuildOptions, MineruOptions, PrebuiltOptions, TfOptions
from ocrstack.commands import add_json
from ocrstack.core import options as opt


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``build`` verb with ``vllm``, ``vllm-prebuilt``, ``tf`` and ``mineru-diffusion``; each
    target's flags come from its options class (:mod:`ocrstack.building.options`)."""
    p = sub.add_parser("build", help="build vLLM from source (guide 3.2) or install the prebuilt upstream")
    bsub = p.add_subparsers(dest="build_command", metavar="TARGET", required=True)
    targets = (
        (
            "vllm",
            "feat-ocr vLLM from source, then the feat-ocr transformers (guide 3.2)",
            BuildOptions,
            _vllm,
        ),
        (
            "vllm-prebuilt",
            "vllm from PyPI, then transformers --no-deps, then checks",
            PrebuiltOptions,
            _prebuilt,
        ),
        (
            "tf",
            'transformers env (guide 3.3): feat-ocr transformers -e "<src>[serving]" with deps, checks',
            TfOptions,
            _tf,
        ),
    )
    for name, text, cls, handler in targets:
        _target(bsub, name, text, cls, handler)
    _register_mineru(bsub)


def _target(bsub: argparse._SubParsersAction, name: str, text: str, cls: type, handler: object) -> None:
    """One ``build`` target: the flags of options class ``cls``, then ``--json``."""
    t = bsub.add_parser(name, help=text)
    opt.add_arguments(t, cls)
    add_json(t, what="the plan", when="with --dry-run: ")
    t.set_defaults(handler=handler, options_class=cls)


def _options(args: argparse.Namespace) -> object:
    """The target's options object from the parsed flags (converted and checked by the declaration).

    Raises:
        UsageError: a value that does not convert or is out of range (flag and fix named).
    """
    return opt.build(args.options_class, opt.namespace_values(args, args.options_class))


def _vllm(args: argparse.Namespace) -> int:
    from ocrstack.building import stage

    return stage.build_vllm(_options(args), as_json=args.json)


def _prebuilt(args: argparse.Namespace) -> int:
    from ocrstack.building import stage

    return stage.install_prebuilt(_options(args), as_json=args.json)


def _tf(args: argparse.Namespace) -> int:
    from ocrstack.building import stage

    return stage.build_tf(_options(args), as_json=args.json)


def _register_mineru(bsub: argparse._SubParsersAction) -> None:
    """``build mineru-diffusion``: the SGLang fork serving MinerU-Diffusion (issue 14)."""
    _target(
        bsub,
        "mineru-diffusion",
        "SGLang fork for MinerU-Diffusion (issue 14), then checks",
        MineruOptions,
        _mineru,
    )


def _mineru(args: argparse.Namespace) -> int:
    from ocrstack.building.mineru import build_mineru

    return build_mineru(_options(args), as_json=args.json)
