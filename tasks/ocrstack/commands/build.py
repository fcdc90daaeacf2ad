"""``ocrstack build vllm`` (source build, guide 3.2), ``build vllm-prebuilt`` (PyPI wheels) and
``build tf`` (the transformers environment with the feat-ocr fork, guide 3.3)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ocrstack.building.options import BuildOptions, PrebuiltOptions, TfOptions, default_patches_dir
from ocrstack.commands import add_json
from ocrstack.core.errors import UsageError

_OTHER_PYTHON = (
    "install into --python even if its version misses the envs/versions.yaml pin "
    "or it holds SDK packages (warning only)"
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``build`` verb with ``vllm``, ``vllm-prebuilt`` and ``tf``."""
    p = sub.add_parser("build", help="build vLLM from source (guide 3.2) or install the prebuilt upstream")
    bsub = p.add_subparsers(dest="build_command", metavar="TARGET", required=True)

    v = bsub.add_parser("vllm", help="feat-ocr vLLM from source, then the feat-ocr transformers (guide 3.2)")
    v.add_argument("--src", type=Path, required=True, help="feat-ocr vLLM checkout (<VLLM_SRC>)")
    v.add_argument(
        "--transformers-src",
        type=Path,
        required=True,
        help="feat-ocr transformers checkout (<TRANSFORMERS_SRC>)",
    )
    v.add_argument(
        "--python",
        type=Path,
        default=Path(sys.executable),
        help="interpreter of the environment to build into (default: this one)",
    )
    v.add_argument(
        "--deps",
        type=Path,
        default=None,
        help="existing vLLM .deps directory for an offline build (sets the *_SRC_DIR variables)",
    )
    v.add_argument(
        "--max-jobs", type=int, default=None, help="override MAX_JOBS (default: from memory and cores)"
    )
    v.add_argument("--ccache-dir", type=Path, default=None, help="CCACHE_DIR for the compile (CI cache)")
    v.add_argument("--log-dir", type=Path, default=BuildOptions.log_dir, help="one log file per step here")
    v.add_argument(
        "--allow-other-commit",
        action="store_true",
        help="build checkouts that are not at the pinned commits (warning only)",
    )
    v.add_argument("--allow-other-python", action="store_true", help=_OTHER_PYTHON)
    v.add_argument("--cuda-home", type=Path, default=None, help="CUDA toolkit root (default: detected)")
    v.add_argument("--cc", default=None, help="host C compiler (default: $CC, gcc-13, gcc)")
    v.add_argument("--cxx", default=None, help="host C++ compiler (default: $CXX, g++-13, g++)")
    v.add_argument("--patches-dir", type=Path, default=None, help="patches directory (default: patches/)")
    v.add_argument(
        "--no-network-check",
        action="store_true",
        help="skip the GitHub reachability preflight when --deps is not given",
    )
    v.add_argument(
        "--network-timeout",
        type=float,
        default=BuildOptions.network_timeout,
        help="seconds for the GitHub probe",
    )
    v.add_argument(
        "--from",
        dest="from_step",
        default=None,
        metavar="STEP",
        help="start at this step (names as in --dry-run), e.g. transformers-fork",
    )
    v.add_argument(
        "--to", dest="to_step", default=None, metavar="STEP", help="stop after this step, e.g. compile-vllm"
    )
    v.add_argument("--dry-run", action="store_true", help="print the ordered plan and run nothing")
    add_json(v, what="the plan", when="with --dry-run: ")
    v.set_defaults(handler=_vllm)

    pb = bsub.add_parser("vllm-prebuilt", help="vllm from PyPI, then transformers --no-deps, then checks")
    pb.add_argument("--python", type=Path, default=Path(sys.executable), help="target interpreter")
    pb.add_argument(
        "--log-dir", type=Path, default=PrebuiltOptions.log_dir, help="one log file per step here"
    )
    pb.add_argument("--allow-other-python", action="store_true", help=_OTHER_PYTHON)
    pb.add_argument("--dry-run", action="store_true", help="print the ordered plan and run nothing")
    add_json(pb, what="the plan", when="with --dry-run: ")
    pb.set_defaults(handler=_prebuilt)

    tf = bsub.add_parser(
        "tf", help='transformers env (guide 3.3): feat-ocr transformers -e "<src>[serving]" with deps, checks'
    )
    tf.add_argument(
        "--transformers-src",
        type=Path,
        required=True,
        help="feat-ocr transformers checkout (<TRANSFORMERS_SRC>)",
    )
    tf.add_argument(
        "--python",
        type=Path,
        default=Path(sys.executable),
        help="interpreter of the tf environment (default: this one)",
    )
    tf.add_argument("--log-dir", type=Path, default=TfOptions.log_dir, help="one log file per step here")
    tf.add_argument(
        "--patches-dir",
        type=Path,
        default=None,
        help="patches directory (default: patches/; transformers/ only)",
    )
    tf.add_argument(
        "--allow-other-commit",
        action="store_true",
        help="install a checkout that is not at the pinned commit (warning only)",
    )
    tf.add_argument("--allow-other-python", action="store_true", help=_OTHER_PYTHON)
    tf.add_argument("--dry-run", action="store_true", help="print the ordered plan and run nothing")
    add_json(tf, what="the plan", when="with --dry-run: ")
    tf.set_defaults(handler=_tf)

    _register_mineru(bsub)


def _vllm(args: argparse.Namespace) -> int:
    from ocrstack.building import stage

    if args.max_jobs is not None and args.max_jobs < 1:
        raise UsageError(f"--max-jobs {args.max_jobs}: must be >= 1", "pass a positive number")
    opts = BuildOptions(
        src=args.src.resolve(),
        transformers_src=args.transformers_src.resolve(),
        python=args.python,
        deps=args.deps.resolve() if args.deps else None,
        max_jobs=args.max_jobs,
        ccache_dir=args.ccache_dir.resolve() if args.ccache_dir else None,
        log_dir=args.log_dir,
        allow_other_commit=args.allow_other_commit,
        allow_other_python=args.allow_other_python,
        cuda_home=args.cuda_home,
        cc=args.cc,
        cxx=args.cxx,
        patches_dir=args.patches_dir or default_patches_dir(),
        network_check=not args.no_network_check,
        network_timeout=args.network_timeout,
        from_step=args.from_step,
        to_step=args.to_step,
        dry_run=args.dry_run,
    )
    return stage.build_vllm(opts, as_json=args.json)


def _prebuilt(args: argparse.Namespace) -> int:
    from ocrstack.building import stage

    opts = PrebuiltOptions(
        python=args.python,
        log_dir=args.log_dir,
        allow_other_python=args.allow_other_python,
        dry_run=args.dry_run,
    )
    return stage.install_prebuilt(opts, as_json=args.json)


def _tf(args: argparse.Namespace) -> int:
    from ocrstack.building import stage

    opts = TfOptions(
        transformers_src=args.transformers_src.resolve(),
        python=args.python,
        log_dir=args.log_dir,
        patches_dir=args.patches_dir or default_patches_dir(),
        allow_other_commit=args.allow_other_commit,
        allow_other_python=args.allow_other_python,
        dry_run=args.dry_run,
    )
    return stage.build_tf(opts, as_json=args.json)


def _register_mineru(bsub: argparse._SubParsersAction) -> None:
    """``build mineru-diffusion``: the SGLang fork serving MinerU-Diffusion (issue 14)."""
    from ocrstack.building.mineru import MineruOptions

    md = bsub.add_parser("mineru-diffusion", help="SGLang fork for MinerU-Diffusion (issue 14), then checks")
    md.add_argument("--sglang-src", type=Path, required=True, help="checkout of the pinned SGLang fork")
    md.add_argument("--python", type=Path, default=Path(sys.executable), help="target interpreter")
    md.add_argument("--log-dir", type=Path, default=MineruOptions.log_dir, help="one log file per step here")
    md.add_argument("--allow-other-commit", action="store_true", help="checkout not at the pin: warn only")
    md.add_argument("--allow-other-python", action="store_true", help=_OTHER_PYTHON)
    md.add_argument("--dry-run", action="store_true", help="print the ordered plan and run nothing")
    add_json(md, what="the plan", when="with --dry-run: ")
    md.set_defaults(handler=_mineru)


def _mineru(args: argparse.Namespace) -> int:
    from ocrstack.building.mineru import MineruOptions, build_mineru

    opts = MineruOptions(
        sglang_src=args.sglang_src.resolve(),
        python=args.python,
        log_dir=args.log_dir,
        allow_other_commit=args.allow_other_commit,
        allow_other_python=args.allow_other_python,
        dry_run=args.dry_run,
    )
    return build_mineru(opts, as_json=args.json)
