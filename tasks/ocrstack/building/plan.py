"""Build plans: ordered steps, each with its argv, environment and done-check; no side effects.

vLLM from source (guide 3.2), in this order -- the order is the point:

1. ``torch`` / ``torchaudio`` / ``torchvision`` pins from the cu130 index
2. ``transformers`` in the build range (vLLM's build imports it)
3. build tools (``build-tools`` in envs/versions.yaml, in that order)
4. ``ocrstack toolchain check`` (nvcc 13 = torch cu130, host gcc, cuda_fp16.h)
5. patches from ``patches/``: every ``git apply --check`` first, then every apply
6. vLLM editable with ``--no-build-isolation`` (CUDA_HOME, CC/CXX/CUDAHOSTCXX, MAX_JOBS,
   offline ``*_SRC_DIR`` variables, CCACHE_DIR)
7. **then** the feat-ocr transformers ``--no-deps -e`` -- never before step 6: vLLM's
   dependencies would overwrite it (guide 3.2, 8)
8. ``ocrstack versions check --env vllm-build``, run in the target interpreter as
   ``python -m ocrstack.building.assertions --env vllm-build`` (same function, lean imports)
9. ``from vllm import LLM``
10. the built extension ``_C_stable_libtorch.abi3.so`` exists (never ``import vllm._C``, guide 3.2)

Prebuilt upstream: ``vllm==upstream.vllm`` from PyPI (brings its torch pins), then
``transformers`` ``upstream.transformers`` with ``--no-deps`` (vllm pins
``upstream.vllm-transformers-pin``; only newer releases know ``minicpm_ocr``), ``pip check``
allowing only that conflict, ``versions check --env vllm``, ``from vllm import LLM``.

transformers environment (guide 3.3, pixi ``tf``): torch/torchvision cu130, patches of
``patches/transformers``, the feat-ocr transformers ``-e "<TRANSFORMERS_SRC>[serving]"`` *with*
its dependencies (unlike step 7 above: no vLLM here to overwrite it), ``accelerate``,
``versions check --env tf``, and ``minicpm_ocr`` known to transformers' auto classes.

Every version comes from envs/versions.yaml via :func:`ocrstack.versions.pin`. The step and plan
data model and the shared step builders are in :mod:`ocrstack.building.steps`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ocrstack import versions
from ocrstack.building import offline
from ocrstack.building.options import BuildOptions, PrebuiltOptions, TfOptions
from ocrstack.building.sources import Patch
from ocrstack.building.steps import (
    DistCondition,
    DoneCheck,
    Plan,
    Step,
    Toolchain,
    build_tool_specs,
    ocrstack_env,
    patch_steps,
    pip_install,
    requirement_condition,
    target_line,
    torch_steps,
    versions_check_step,
)
from ocrstack.core import paths

__all__ = ["TFCHECKS", "prebuilt_plan", "tf_plan", "vllm_plan"]


def vllm_plan(
    opts: BuildOptions,
    toolchain: Toolchain,
    max_jobs: int,
    *,
    jobs_reason: str = "",
    ccache: str | None = None,
    patches: list[Patch] | None = None,
    runner_python: str | None = None,
) -> Plan:
    """The source-build plan (module docstring) for ``opts``; pure: no file, process or network access.

    Args:
        toolchain: resolved CUDA_HOME and host compilers (see :class:`Toolchain`).
        max_jobs: MAX_JOBS for the compile (see :mod:`ocrstack.building.resources`).
        ccache: path of ccache when present (CCACHE_DIR is set only with ``opts.ccache_dir``).
        patches: from :func:`ocrstack.building.sources.list_patches`.
        runner_python: interpreter that runs ocrstack's own commands (toolchain check,
            fix-pip-cuda; default: this one), so the target needs none of ocrstack's deps.
            The version assertions run in the target itself (``ocrstack.building.assertions``,
            PyYAML + packaging only).
    """
    py = str(opts.python)
    runner_py = runner_python or sys.executable
    src = str(opts.src)
    tsrc = str(opts.transformers_src)
    tf = versions.pin("transformers")
    commit = str(versions.pin("vllm.fork-commit"))
    ext = str(versions.pin("vllm.extension"))
    steps: list[Step] = list(torch_steps(py))

    steps.append(
        Step(
            "transformers-build-range",
            "transformers in the range vLLM's build needs (guide 3.2); kept if the fork is already there",
            pip_install(py, f"transformers{tf['build-range']}"),
            done=DoneCheck((DistCondition("transformers", "spec", tf["build-range"]),)),
        )
    )
    tools = build_tool_specs()
    steps.append(
        Step(
            "build-tools",
            "setuptools-rust, setuptools-scm, setuptools, cmake, ninja, packaging, wheel, jinja2 (guide 3.2)",
            pip_install(py, *tools),
            done=DoneCheck(tuple(requirement_condition(s) for s in tools)),
        )
    )
    if toolchain.kind == "pip":
        wheels = {str(k): str(v) for k, v in versions.pin("pip-cuda-toolchain").items()}
        steps.append(
            Step(
                "pip-cuda-wheels",
                "the pip-wheel CUDA toolchain incl. nvidia-cuda-cccl (guide 3.2: without it, no nv/target)",
                pip_install(py, *(f"{k}=={v}" for k, v in wheels.items())),
                done=DoneCheck(tuple(DistCondition(k, "spec", f"=={v}") for k, v in wheels.items())),
            )
        )
        steps.append(
            Step(
                "fix-pip-cuda",
                "guide 3.2 layout fix-up of the pip CUDA wheels (idempotent, no dangling links)",
                (runner_py, "-m", "ocrstack", "toolchain", "fix-pip-cuda", "--python", py),
            )
        )
    check_argv = [
        runner_py,
        "-m",
        "ocrstack",
        "toolchain",
        "check",
        "--python",
        py,
        "--cxx",
        toolchain.cudahostcxx,
    ]
    if toolchain.cuda_home:
        check_argv += ["--cuda-home", toolchain.cuda_home]
    steps.append(
        Step(
            "toolchain-check",
            "nvcc version, nvcc CUDA major == torch's, host gcc accepted, cuda_fp16.h finds nv/target",
            tuple(check_argv),
            env={"CUDA_HOME": toolchain.cuda_home} if toolchain.cuda_home else {},
        )
    )
    steps += patch_steps(patches or [], {"vllm": src, "transformers": tsrc})

    env: dict[str, str] = {}
    if toolchain.cuda_home:
        env["CUDA_HOME"] = toolchain.cuda_home
    env.update(CC=toolchain.cc, CXX=toolchain.cxx, CUDAHOSTCXX=toolchain.cudahostcxx, MAX_JOBS=str(max_jobs))
    if opts.deps is not None:
        env.update(offline.deps_env(opts.deps))
    if ccache and opts.ccache_dir is not None:
        env["CCACHE_DIR"] = str(opts.ccache_dir)
    prepend = [str(Path(py).parent)]
    if toolchain.kind == "pip" and toolchain.cuda_home:
        prepend.append(
            str(Path(toolchain.cuda_home) / "bin")
        )  # guide 3.2: PATH="$VIRTUAL_ENV/bin:$CU/bin:$PATH"
    steps.append(
        Step(
            "compile-vllm",
            f"vLLM editable, --no-build-isolation, MAX_JOBS={max_jobs} (guide 3.2; 96 cores: ~20 min)",
            pip_install(py, "-e", src, "--no-build-isolation", "--progress-bar", "off"),
            env=env,
            path_prepend=tuple(prepend),
            cwd=src,
            done=DoneCheck(
                (DistCondition("vllm", "contains", commit[:9]),), files=(str(Path(src) / "vllm" / ext),)
            ),
        )
    )
    steps.append(
        Step(
            "transformers-fork",
            "feat-ocr transformers --no-deps -e, AFTER vLLM (guide 3.2: the order must not be reversed)",
            pip_install(py, "--no-deps", "-e", tsrc),
            done=DoneCheck((DistCondition("transformers", "spec", f"=={tf['fork-version']}"),)),
        )
    )
    steps.append(versions_check_step(py, "vllm-build", "(guide 3.2, 9)"))
    steps.append(
        Step(
            "import-vllm",
            "`from vllm import LLM` succeeds (guide 3.2)",
            (py, "-c", 'from vllm import LLM; print("vLLM OK")'),
        )
    )
    steps.append(
        Step(
            "extension-file",
            f"the built extension is {ext} (guide 3.2: never judge by `import vllm._C`)",
            (py, "-m", "ocrstack.building.extension", ext),
            env=ocrstack_env(),
        )
    )

    preflight = [
        f"vLLM checkout {src} at pinned commit {commit} (--allow-other-commit to override)",
        f"transformers checkout {tsrc} at pinned commit {tf['fork-commit']}",
        target_line(py, "vllm-build"),
    ]
    if opts.deps is not None:
        preflight.append(f"offline build: every *_SRC_DIR under {opts.deps} exists")
    elif opts.network_check:
        spec = offline.load()
        preflight.append(
            f"{spec.probe_host}:{spec.probe_port} reachable within {opts.network_timeout:g} s, "
            "else stop and list the --deps variables"
        )
    if toolchain.kind == "missing":
        preflight.append(
            "NO CUDA TOOLKIT FOUND: pass --cuda-home, use pixi -e vllm-build, "
            "or install the pip wheels and run `ocrstack toolchain fix-pip-cuda`"
        )
    notes = [f"MAX_JOBS={max_jobs}" + (f": {jobs_reason}" if jobs_reason else "")]
    notes.append(
        f"ccache: {ccache}" + (f", CCACHE_DIR={opts.ccache_dir}" if opts.ccache_dir else "")
        if ccache
        else "ccache not found: install it to avoid full recompiles (guide 8)"
    )
    notes.append(f"toolchain: {toolchain.kind}, CUDA_HOME={toolchain.cuda_home or '-'}")
    notes.append(f"logs: {opts.log_dir}/NN-<step>.log")
    return Plan("build vLLM from source (guide 3.2)", py, tuple(steps), tuple(preflight), tuple(notes))


def prebuilt_plan(opts: PrebuiltOptions) -> Plan:
    """The prebuilt upstream plan: PyPI vLLM, then transformers ``--no-deps``, then assertions. Pure."""
    py = str(opts.python)
    up = versions.pin("upstream")
    steps = (
        Step(
            "vllm-wheel",
            f"vllm=={up['vllm']} from PyPI with its own torch pins",
            pip_install(py, f"vllm=={up['vllm']}"),
            done=DoneCheck((DistCondition("vllm", "spec", f"=={up['vllm']}"),)),
        ),
        Step(
            "transformers-override",
            f"transformers{up['transformers']} --no-deps AFTER vLLM "
            f"(vllm pins {up['vllm-transformers-pin']}; "
            "only newer releases know minicpm_ocr)",
            pip_install(py, "--no-deps", f"transformers{up['transformers']}"),
            done=DoneCheck((DistCondition("transformers", "spec", up["transformers"]),)),
        ),
        Step(
            "pip-check",
            "pip check: the transformers override must be the only conflict",
            (py, "-m", "ocrstack.building.pipcheck", "--allow", "transformers"),
            env=ocrstack_env(),
        ),
        versions_check_step(py, "vllm", "upstream pins"),
        Step(
            "import-vllm",
            "`from vllm import LLM` succeeds",
            (py, "-c", 'from vllm import LLM; print("vLLM OK")'),
        ),
    )
    return Plan(
        "install prebuilt upstream vLLM (PyPI)",
        py,
        steps,
        preflight=(target_line(py, "vllm"),),
        notes=(f"logs: {opts.log_dir}/NN-<step>.log",),
    )


#: checks the tf plan runs by path in the target interpreter (imports nothing from ocrstack)
TFCHECKS = paths.PACKAGE_DIR / "building" / "tfchecks.py"


def tf_plan(opts: TfOptions, patches: list[Patch] | None = None) -> Plan:
    """The transformers-environment plan (guide 3.3; module docstring); pure.

    Steps: ``torch`` (torch, torchvision cu130) -> ``patch-*`` (``patches/transformers`` only) ->
    ``transformers-fork-serving`` (``pip install -e "<TRANSFORMERS_SRC>[serving]"``, with deps;
    done when the fork version is installed and every ``[serving]`` requirement is satisfied)
    -> ``accelerate`` -> ``versions-check`` (``--env tf``) -> ``minicpm-ocr-known``.
    """
    py = str(opts.python)
    tsrc = str(opts.transformers_src)
    tf = versions.pin("transformers")
    extra = "serving"
    steps: list[Step] = list(torch_steps(py, ("torch", "torchvision")))
    steps += patch_steps(patches or [], {"transformers": tsrc})
    steps.append(
        Step(
            "transformers-fork-serving",
            f"feat-ocr transformers -e with its dependencies and the [{extra}] extra "
            "(guide 3.3: `transformers serve` is the OpenAI-compatible server)",
            pip_install(py, "-e", f"{tsrc}[{extra}]"),
            done=DoneCheck(
                (DistCondition("transformers", "spec", f"=={tf['fork-version']}"),),
                command=(py, str(TFCHECKS), "extra", extra),
            ),
        )
    )
    steps.append(
        Step(
            "accelerate",
            "accelerate (guide 3.3)",
            pip_install(py, "accelerate"),
            done=DoneCheck((DistCondition("accelerate", "spec", ""),)),
        )
    )
    steps.append(versions_check_step(py, "tf", "for the tf environment (guide 3.3, 9)"))
    steps.append(
        Step(
            "minicpm-ocr-known",
            "transformers knows the minicpm_ocr architecture (guide 8; on PyPI only "
            f"transformers{versions.pin('upstream.transformers')})",
            (py, str(TFCHECKS), "arch", "minicpm_ocr"),
        )
    )
    preflight = (
        f"transformers checkout {tsrc} at pinned commit {tf['fork-commit']} "
        "(--allow-other-commit to override)",
        target_line(py, "tf"),
    )
    notes = (
        "torch/torchvision/accelerate are skipped when the pixi tf environment already has them",
        f"logs: {opts.log_dir}/NN-<step>.log",
    )
    return Plan(
        "transformers environment with the feat-ocr fork (guide 3.3)", py, tuple(steps), preflight, notes
    )
