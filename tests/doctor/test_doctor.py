"""Tests for ocrstack.doctor: every rule matches a realistic log excerpt and none of its near misses.

The excerpts reproduce message texts as the tools print them (sources in each rule's
``source`` field: guide 8 rows and public issue threads). Near misses are lines that
look alike but mean something else (success lines, other libraries, other exit codes).
"""

# ruff: noqa: E501 -- log excerpts are kept verbatim, one log line per string
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import yaml

from ocrstack import versions
from ocrstack.cli import main
from ocrstack.core.errors import CheckFailed, ConfigError, InputError
from ocrstack.doctor import diagnose, load_rules, render
from ocrstack.doctor.rules import expand_pins, parse_rules

SEED = "seeds/000_a6ffb5c9f36940fa.txt"

# rule id -> (log excerpt; the 1-based line that must be reported, near-miss lines that must NOT match)
CASES: dict[str, tuple[str, int, list[str]]] = {
    "cutlass-clone-failed": (
        "[0/8] Performing download step (git clone) for 'cutlass-populate'\n"
        "Cloning into 'cutlass-src'...\n"
        "fatal: unable to access 'https://github.com/nvidia/cutlass.git/': Could not resolve host: github.com\n"
        "CMake Error at cutlass-subbuild/cutlass-populate-prefix/tmp/cutlass-populate-gitclone.cmake:39 (message):\n"
        "  Failed to clone repository: 'https://github.com/nvidia/cutlass.git'\n",
        5,
        ["-- Using local CUTLASS: VLLM_CUTLASS_SRC_DIR=/deps/cutlass-src", "Cloning into 'cutlass-src'..."],
    ),
    "googletest-clone-failed": (
        "-- CUTLASS_ENABLE_TESTS: ON\n"
        "[1/9] Performing download step (git clone) for 'googletest-populate'\n"
        "CMake Error at googletest-populate-gitclone.cmake:31 (message):\n"
        "  Failed to clone repository: 'https://github.com/google/googletest.git'\n",
        2,
        ["-- googletest disabled (CUTLASS_ENABLE_TESTS=OFF)", "[100%] Built target gtest"],
    ),
    "mlir-config-not-found": (
        "CMake Error at CMakeLists.txt:83 (find_package):\n"
        '  Could not find a package configuration file provided by "MLIR" with any of\n'
        "  the following names:\n\n    MLIRConfig.cmake\n    mlir-config.cmake\n",
        2,
        ['  Could not find a package configuration file provided by "Torch" with any of'],
    ),
    "compile-killed-code9": (
        "[312/421] Building CUDA object CMakeFiles/_C.dir/csrc/attention/paged_attention_v2.cu.o\n"
        "FAILED: [code=9] CMakeFiles/_C.dir/csrc/quantization/machete/generated/machete_mm_bf16u4_impl_part0.cu.o\n"
        "FAILED: [code=9] CMakeFiles/_C.dir/csrc/moe/marlin_moe_wna16/kernel_bf16_kfe2m1f.cu.o\n"
        "ninja: build stopped: subcommand failed.\n",
        2,
        ["FAILED: [code=1] CMakeFiles/_C.dir/csrc/ops.cu.o", "FAILED: CMakeFiles/_C.dir/csrc/ops.cu.o"],
    ),
    "compile-oom-killed": (
        "      /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DTORCH_EXTENSION_NAME=_C -c csrc/custom_all_reduce.cu\n"
        "      Killed\n"
        "      ninja: build stopped: subcommand failed.\n"
        "  subprocess.CalledProcessError: Command '['cmake', '--build', '.', '-j=64', '--target=_C']' "
        "returned non-zero exit status 9.\n",
        2,
        [
            "returned non-zero exit status 1.",
            "error: command '/usr/bin/g++' failed with exit code 90",
            "Killed 3 stale workers",
            "INFO: exit status 0",
        ],
    ),
    "fetchcontent-offline": (
        "[0/8] Performing download step (git clone) for 'vllm-flash-attn-populate'\n"
        "Cloning into 'vllm-flash-attn-src'...\n"
        "fatal: unable to access 'https://github.com/vllm-project/flash-attention.git/': Could not resolve host: github.com\n"
        "-- Had to git clone more than once: 3 times.\n"
        "  Failed to clone repository: 'https://github.com/vllm-project/flash-attention.git'\n",
        3,
        [
            "Cloning into 'vllm-flash-attn-src'...",
            "-- Populating vllm-flash-attn from VLLM_FLASH_ATTN_SRC_DIR",
            "fatal: unable to access 'https://internal.mirror/repo.git/': The requested URL returned error: 403",
        ],
    ),
    "unsupported-gnu-version": (
        "In file included from /usr/local/cuda-12.5/bin/../targets/x86_64-linux/include/cuda_runtime.h:82,\n"
        "/usr/local/cuda-12.5/bin/../targets/x86_64-linux/include/crt/host_config.h:143:2: error: #error -- "
        "unsupported GNU version! gcc versions later than 13 are not supported! The nvcc flag "
        "'-allow-unsupported-compiler' can be used to override this version check\n",
        2,
        ["gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0", "-- The CXX compiler identification is GNU 13.2.0"],
    ),
    "cannot-find-lcudart": (
        "[421/421] Linking CXX shared module _C_stable_libtorch.abi3.so\n"
        "/usr/bin/ld: cannot find -lcudart: No such file or directory\n"
        "collect2: error: ld returned 1 exit status\n",
        2,
        ["/usr/bin/ld: cannot find -lcudart_static_extra_stub_x", "-- Found CUDA runtime: libcudart.so.13"],
    ),
    "nvrtc-library-notfound": (
        "CMake Error: The following variables are used in this project, but they are set to NOTFOUND.\n"
        "Please set them or make sure they are set and tested correctly in the CMake files:\n"
        "CUDA_nvrtc_LIBRARY (ADVANCED)\n"
        '    linked by target "_C" in directory /src/vllm\n',
        3,
        ["-- Found CUDA_nvrtc_LIBRARY: /venv/lib/python3.13/site-packages/nvidia/cu13/lib/libnvrtc.so"],
    ),
    "cccl-nv-target-missing": (
        "In file included from /venv/lib/python3.13/site-packages/nvidia/cu13/include/cuda_fp16.h:124,\n"
        "/venv/lib/python3.13/site-packages/nvidia/cu13/include/cuda_fp16.hpp:67:10: fatal error: "
        "nv/target: No such file or directory\n",
        2,
        ["#include <nv/target>", "cuda_fp16.h: found"],
    ),
    "no-module-vllm-c": (
        ">>> import vllm._C\n"
        "Traceback (most recent call last):\n"
        '  File "<stdin>", line 1, in <module>\n'
        "ModuleNotFoundError: No module named 'vllm._C'\n",
        4,
        ["ModuleNotFoundError: No module named 'vllm._C_stable_libtorch'", "vLLM OK"],
    ),
    "transformers-fork-overwritten": (
        "Installing collected packages: transformers, vllm\n"
        "  Attempting uninstall: transformers\n"
        "Successfully installed transformers-5.19.0 vllm-0.11.1.dev123+g5c2b92a5d.cu130\n",
        3,
        [
            "Successfully installed transformers-5.19.0.dev0",
            "5.19.0.dev0",
            "Successfully installed transformers-5.19.01",
        ],
    ),
    "pypdfium2-missing": (
        '  File "/sdk-env/lib/python3.10/site-packages/minicpmvocr/layout/render.py", line 3, in <module>\n'
        "    import pypdfium2 as pdfium\n"
        "ModuleNotFoundError: No module named 'pypdfium2'\n",
        3,
        ["Requirement already satisfied: pypdfium2>=4 in ./sdk-env/lib/python3.10/site-packages"],
    ),
    "minicpm-ocr-arch-unknown": (
        "ValueError: The checkpoint you are trying to load has model type `minicpm_ocr` but Transformers does "
        "not recognize this architecture. This could be because of an issue with the checkpoint, or because "
        "your version of Transformers is out of date.\n",
        1,
        [
            "ValueError: The checkpoint you are trying to load has model type `qwen9` but Transformers does "
            "not recognize this architecture.",
            "INFO Resolved architecture: MiniCPMOCRForConditionalGeneration",
        ],
    ),
    "could-not-find-nvcc": (
        "(EngineCore_DP0 pid=4242) ERROR 10-19 11:02:03 [core.py:708]   File "
        '"/venv/lib/python3.13/site-packages/flashinfer/jit/cpp_ext.py", line 51, in get_cuda_path\n'
        "(EngineCore_DP0 pid=4242) ERROR 10-19 11:02:03 [core.py:708] RuntimeError: Could not find nvcc\n",
        2,
        ["nvcc: NVIDIA (R) Cuda compiler driver", "-- Found nvcc: /usr/local/cuda/bin/nvcc"],
    ),
    "ptxas-version-mismatch": (
        "(EngineCore_DP0 pid=912) ERROR [core.py:708] ptxas /tmp/tmpkoko0xtp.ptx, line 5; fatal   : Unsupported .version 9.4; current version is '9.0'\n"
        "ptxas fatal   : Ptx assembly aborted due to errors\n",
        1,
        [
            "ptxas info    : Used 128 registers, 400 bytes cmem[0]",
            "Supported .version 9.0",
            "ptxas fatal   : Ptx assembly aborted due to errors",
        ],
    ),
    "flashinfer-cubin-mismatch": (
        '  File "/venv/lib/python3.13/site-packages/flashinfer/jit/env.py", line 76, in _get_cubin_dir\n'
        "    raise RuntimeError(\n"
        "RuntimeError: flashinfer-cubin version (0.6.8.post1) does not match flashinfer version (0.6.10). "
        "Please install the same version of both packages. Set FLASHINFER_DISABLE_VERSION_CHECK=1 to bypass this check.\n",
        3,
        ["flashinfer-cubin             : 0.6.16", "Successfully installed flashinfer-cubin-0.6.10"],
    ),
    "cuda-driver-insufficient": (
        "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version\n"
        "CUDA kernel errors might be asynchronously reported at some other API call\n",
        1,
        ["CUDA driver version: 13.0", "CUDA runtime version: 13.0"],
    ),
    "torch-driver-too-old": (
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your "
        "GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx\n",
        1,
        ["NVIDIA driver on your system: 590.48.01"],
    ),
    "flashinfer-topk-kernel-invalid": (
        "(EngineCore_DP0 pid=77) ERROR [core.py:708] RuntimeError: TopKMaskLogits failed with error code "
        "device kernel image is invalid\n",
        1,
        ["INFO Using FlashInfer TopKMaskLogits sampler"],
    ),
    "nvcc-compress-mode-unknown": (
        "[1/3] /usr/local/cuda-12.4/bin/nvcc --compress-mode=size -c sampling.cu -o sampling.cuda.o\n"
        "nvcc fatal   : Unknown option '--compress-mode=size'\n",
        2,
        ["nvcc fatal   : Unknown option '-fopenmp'", "nvcc --compress-mode=size -c a.cu"],
    ),
    "torchcodec-lib": (
        "OSError: libtorchcodec_image.so: cannot open shared object file: No such file or directory\n",
        1,
        ["Requirement already satisfied: torchcodec in ./venv", "import torchvision"],
    ),
    "gpu-busy-free-memory": (
        "ValueError: Free memory on device (20.5/31.36 GiB) on startup is less than desired GPU memory "
        "utilization (0.85, 26.66 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n",
        1,
        [
            "INFO Free memory on device (30.1/31.36 GiB) on startup. Desired GPU memory utilization is (0.85, 26.66 GiB)."
        ],
    ),
    "cuda-oom": (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
        "of 31.36 GiB of which 1.02 GiB is free.\n",
        1,
        ["INFO Memory profiling takes 3.2 seconds", "Available KV cache memory: 4.2 GiB"],
    ),
    "cuda-graph-capture-stalled": (
        "INFO 10-19 11:05:01 [gpu_model_runner.py:3400] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  61%|"
        "██████    | 41/67 [00:06<00:04,  6.30it/s]\n"
        "INFO 10-19 11:08:01 [launcher.py:99] Shutting down FastAPI HTTP server.\n"
        "Received SIGTERM\n",
        1,
        ["INFO cudagraph_capture_sizes: [1, 2, 4]", "INFO Graph capturing finished in 12 secs"],
    ),
    "spec-decode-multimodal-unsupported": (
        "(EngineCore pid=1368036) ERROR 05-05 15:23:43 [core.py:1136] NotImplementedError: Speculative Decoding "
        "with draft models or parallel drafting does not support multimodal models yet\n",
        1,
        [
            "INFO Speculative decoding enabled: method=dspark, num_speculative_tokens=15",
            "NotImplementedError: Speculative Decoding with draft models or parallel drafting does not support M-RoPE yet",
        ],
    ),
    "encoder-cache-too-small": (
        '{"error":{"message":"The decoder prompt contains a(n) image item with length 6042, which exceeds the '
        "pre-allocated encoder cache size 4800. Please reduce the input size or increase the encoder cache size "
        'by setting --limit-mm-per-prompt at startup.","type":"BadRequestError","code":400}}\n',
        1,
        ["INFO Encoder cache will be initialized with a budget of 16384 tokens"],
    ),
    "too-many-images": (
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'At most 1 image(s) may be "
        "provided in one request.', 'type': 'BadRequestError', 'param': None, 'code': 400}\n",
        1,
        ["--limit-mm-per-prompt '{\"image\": 36}'", "At most 36 pages per request are sent"],
    ),
    "prompt-longer-than-max-model-len": (
        "ValueError: The decoder prompt (length 45012) is longer than the maximum model length of 40960. Make sure "
        "that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens.\n",
        1,
        ["INFO Using max model len 40960", "prompt length 1975 tokens"],
    ),
    "request-failed-until-timeout": (
        "2026-10-19 11:20:00 WARNING page 1 block 3: request failed until timeout (600s)\n",
        1,
        ["2026-10-19 11:20:00 INFO page 1 block 3: request ok in 2.1s"],
    ),
    "no-endpoint-ready": (
        "RuntimeError: no vllm endpoint became ready within 1800s: http://127.0.0.1:18499\n",
        1,
        ["INFO endpoint http://127.0.0.1:18499 became ready after 182s"],
    ),
    "image-request-400": (
        'INFO:     127.0.0.1:51444 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n',
        1,
        [
            'INFO:     127.0.0.1:51444 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
            'INFO:     127.0.0.1:51444 - "GET /v1/models HTTP/1.1" 404 Not Found',
        ],
    ),
    "thinking-mode-on": (
        "## Page 1\n\n<think>\nThe user wants the table recognised. Let me look at the first row\n",
        3,
        ["## Page 1", "enable_thinking=false"],
    ),
    "otsl-not-converted": (
        "| page 3 |\n<otsl><fcel>Name<fcel>Value<nl><fcel>a<fcel>1<nl></otsl>\n",
        2,
        ["<table><tr><td>Name</td></tr></table>", "OTSL converted to HTML: 3 tables"],
    ),
    "mm-placeholder-mismatch": (
        "RuntimeError: Attempted to assign 1936 = 1936 multimodal tokens to 1940 placeholders\n",
        1,
        ["INFO 1936 multimodal tokens"],
    ),
    "paddle-cpu-build-cuda": (
        '  File "/sdk-env/lib/python3.10/site-packages/paddle/device/__init__.py", line 181, in _convert_to_place\n'
        "ValueError: The device should not be 'gpu', since PaddlePaddle is not compiled with CUDA\n",
        2,
        ["PaddlePaddle 3.2.1 (CPU) is installed", "Running verify PaddlePaddle program ..."],
    ),
    "input-required": (
        "minicpmvocr: error: At least one of input.image_dir / input.files_dir / input.file_path is required\n",
        1,
        ["input.file_path=/data/doc.pdf"],
    ),
    "input-relative-path": (
        "FileNotFoundError: input.file_path not found: ../doc.pdf\n",
        1,
        ["input.file_path found: /data/doc.pdf"],
    ),
    "pip-timeout": (
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection "
        "broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='pypi.org', port=443): Read timed out. (read timeout=15)\")'\n",
        1,
        [
            "Collecting torch==2.14.0",
            "Downloading torch-2.14.0-cp313-cp313-manylinux_2_28_x86_64.whl (900 MB)",
        ],
    ),
    "server-unreachable-local": (
        "httpx.ConnectError: [Errno 111] Connection refused\n",
        1,
        ["INFO connected to http://127.0.0.1:18499"],
    ),
    "pixi-cuda-virtual-package": (
        "Error:   × Cannot install environment 'default'\n"
        "  ╰─▶ Virtual package '__cuda' does not match any of the available virtual packages on your machine: "
        "[__archspec=1=zen2, __glibc=2.39=0, __unix=0=0, __linux=6.11.0=0]\n"
        "  help:  You can mock the virtual package by overriding the environment variable, e.g.: '`CONDA_OVERRIDE_CUDA=12.0`'\n",
        2,
        ["   Virtual packages: __unix=0=0", "                   : __cuda=13.0=0"],
    ),
    "pixi-build-isolation-torch": (
        "  ├─▶ Failed to build `vllm @ file:///work/vllm`\n"
        "  ├─▶ The build backend returned an error\n"
        "  ╰─▶ Call to `setuptools.build_meta.build_editable` failed (exit status: 1)\n"
        "      ModuleNotFoundError: No module named 'torch'\n"
        "      hint: This usually indicates a problem with the package or the build environment.\n",
        4,
        [
            "ModuleNotFoundError: No module named 'torchcodec'",
            "ModuleNotFoundError: No module named 'torch.distributed.elastic'",
        ],
    ),
    # issue 14: SGLang texts from python/sglang/srt/models/registry.py, dllm/config.py, cuda_graph_runner.py
    "mineru-diffusion-needs-sglang-fork": (
        "[2026-03-30 10:12:01] Load weight begin. avail mem=78.51 GB\n"
        "[2026-03-30 10:12:02] Scheduler hit an exception: Traceback (most recent call last):\n"
        "ValueError: Model architectures ['MinerUDiffusionForConditionalGeneration'] are not supported for now. Supported architectures: dict_keys(['LlamaForCausalLM', 'Qwen2VLForConditionalGeneration'])\n",
        3,
        [
            "ValueError: Model architectures ['Qwen2VLForConditionalGeneration'] are not supported for now.",
            "[2026-03-30 10:12:40] Load weight end. type=MinerUDiffusionForConditionalGeneration, dtype=torch.bfloat16",
        ],
    ),
    "vllm-transformers-pin-conflict": (  # issue 14: pip's resolver after transformers --no-deps
        "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.\n"
        "vllm 0.33.0 requires transformers<5.21.0,>=5.16.1, but you have transformers 5.23.0 which is incompatible.\n",
        2,
        [
            "vllm 0.33.0 requires transformers<5.21.0,>=5.16.1, but you have transformers 5.20.2 which is incompatible.",
            "vllm 0.33.0 requires torch==2.14.0, but you have torch 2.14.1 which is incompatible.",
        ],
    ),
    "sglang-dllm-flag-unknown": (
        "usage: sglang serve [-h] --model-path MODEL_PATH [--host HOST] [--port PORT]\n"
        "sglang serve: error: unrecognized arguments: --dllm-algorithm LowConfidence\n",
        2,
        [
            "sglang serve: error: unrecognized arguments: --trust-request-mm-kwargs",
            "  --dllm-algorithm DLLM_ALGORITHM  The diffusion LLM algorithm, such as LowConfidence.",
        ],
    ),
    "sglang-cuda-graph-capture-failed": (
        "[2026-04-23 10:00:01] Capture cuda graph begin. This can take up to several minutes. avail mem=3.10 GB\n"
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "Possible solutions:\n",
        2,
        [
            "[2026-04-23 10:01:40] Capture cuda graph end. Time elapsed: 99.12 s.",
            "Capture cuda graph bs [1, 2, 4, 8, 16]",
        ],
    ),
    "mineru-layout-answer-unreadable": (
        "ocrstack: parse page.png\n"
        "page.png page 1: layout answer line 7: missing <|box_end|>, <|ref_start|>, <|ref_end|> (answer cut short?): '<|box_start|>100 980 400 99'\n",
        2,
        ["page 1: 12 layout blocks", "Layout Detection: 12 lines"],
    ),
}


def _ids(findings) -> list[str]:
    return [f.rule_id for f in findings]


def test_rules_load_and_are_unique() -> None:
    rules = load_rules()
    assert len({r.id for r in rules}) == len(rules)
    for r in rules:
        assert r.cause and r.fix and r.source
        assert "{pin:" not in r.cause + r.fix, r.id
        assert re.search(r"guide \d|https://", r.source), f"{r.id}: source must name a guide section or a URL"


def test_every_matching_rule_has_a_case() -> None:
    matching = {r.id for r in load_rules() if r.pattern is not None}
    assert matching == set(CASES), (matching - set(CASES), set(CASES) - matching)


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_matches_excerpt_and_not_near_misses(rule_id: str) -> None:
    excerpt, line_no, near_misses = CASES[rule_id]
    found = [f for f in diagnose(excerpt) if f.rule_id == rule_id]
    assert found, f"{rule_id} did not match its excerpt"
    assert found[0].line_no == line_no
    assert found[0].line == excerpt.split("\n")[line_no - 1].strip()[:400]
    for miss in near_misses:
        assert rule_id not in _ids(diagnose(miss)), f"{rule_id} wrongly matched near miss: {miss!r}"


def _guide8_rows(text: str) -> list[str]:
    """First cells of the table rows in guide section 8 (after the header and separator rows)."""
    section = text.split("## 8.", 1)[1].split("\n## 9.", 1)[0]
    rows = []
    for line in section.splitlines():
        line = line.strip()
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("现象",):  # header row
            continue
        rows.append(cells[0])
    return rows


def test_every_guide8_row_has_a_rule(shared: Path) -> None:
    seed = shared / SEED
    if not seed.is_file():
        pytest.skip(f"guide not found at {seed}")
    rows = _guide8_rows(seed.read_text(encoding="utf-8"))
    assert len(rows) >= 30, rows  # three tables: install/compile, server start, parsing
    covered = {r.guide_row for r in load_rules() if r.guide_row}
    missing = [row for row in rows if row not in covered]
    assert not missing, f"guide 8 rows without a doctor rule: {missing}"
    unknown = covered - set(rows)
    assert not unknown, f"rules name guide rows that are not in guide 8: {unknown}"


def test_advice_only_rules_are_only_silent_symptoms() -> None:
    """Rules without a regex are allowed only for symptoms that print no message."""
    silent = {r.id for r in load_rules() if r.pattern is None}
    assert silent == {"run-tag-reused"}


def test_unless_after_drops_a_capture_that_finished() -> None:
    log = (
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:09<00:00,  7.1it/s]\n"
        "INFO 10-19 11:05:11 [gpu_model_runner.py:3480] Graph capturing finished in 10 secs, took 0.61 GiB\n"
        "INFO:     Application startup complete.\n"
    )
    assert "cuda-graph-capture-stalled" not in _ids(diagnose(log))
    # a capture that restarts after an earlier success and then stops is reported
    log2 = log + "Capturing CUDA graphs (decode, FULL):  10%|█         | 5/51\n"
    assert "cuda-graph-capture-stalled" in _ids(diagnose(log2))


def test_progress_bar_carriage_returns_and_ansi_codes() -> None:
    log = "\x1b[31mError\x1b[0m:   × \x1b[1mVirtual package '__cuda' does not match\x1b[0m any\n"
    f = diagnose(log)
    assert _ids(f) == ["pixi-cuda-virtual-package"]
    assert "\x1b" not in f[0].line
    bar = "Capturing CUDA graphs: 10%\rCapturing CUDA graphs: 50%\rCapturing CUDA graphs: 61%\n"
    g = diagnose(bar)
    assert g and g[0].line == "Capturing CUDA graphs: 61%"


def test_repeated_lines_reported_once_with_count() -> None:
    log = "\n".join(f"FAILED: [code=9] CMakeFiles/_C.dir/k{i}.cu.o" for i in range(50))
    f = [x for x in diagnose(log) if x.rule_id == "compile-killed-code9"]
    assert len(f) == 1 and f[0].line_no == 1 and f[0].occurrences == 50


def test_realistic_build_log_diagnoses_in_line_order() -> None:
    log = (
        "+ pip install -e . --no-build-isolation --progress-bar off\n"
        "-- FetchContent base directory: /src/vllm/.deps\n"
        "[0/8] Performing download step (git clone) for 'cutlass-populate'\n"
        "  Failed to clone repository: 'https://github.com/nvidia/cutlass.git'\n"
        "FAILED: [code=9] CMakeFiles/_C.dir/csrc/ops.cu.o\n"
    )
    f = diagnose(log)
    assert [(x.rule_id, x.line_no) for x in f] == [("cutlass-clone-failed", 4), ("compile-killed-code9", 5)]
    assert "fetchcontent-offline" not in _ids(f)  # the specific CUTLASS rule wins


def test_nothing_matched_says_so() -> None:
    assert diagnose("all good\nINFO: Application startup complete.\n") == []
    assert "no known error pattern matched" in render([])


def test_stage_filter() -> None:
    log = CASES["could-not-find-nvcc"][0] + CASES["compile-killed-code9"][0]
    assert set(_ids(diagnose(log, stages=["build"]))) == {"compile-killed-code9"}


def test_fix_texts_use_pins_from_versions_yaml() -> None:
    rules = {r.id: r for r in load_rules()}
    assert versions.pin("pip-cuda-toolchain.nvidia-cuda-cccl") in rules["cccl-nv-target-missing"].fix
    assert str(versions.pin("conda-toolchain.cuda")) in rules["pixi-cuda-virtual-package"].fix
    fork = versions.pin("transformers.fork-version")
    assert fork in rules["transformers-fork-overwritten"].fix
    assert expand_pins("{pin:transformers.fork-version|base}") == fork.removesuffix(".dev0")
    with pytest.raises(ConfigError):
        expand_pins("{pin:serve.port|re}")


@pytest.mark.parametrize(
    "data, match",
    [
        ({"schema": 2, "rules": []}, "schema: 1"),
        (
            {"schema": 1, "rules": [{"id": "a", "stage": "build", "regex": "x", "cause": "c", "fix": "f"}]},
            "lacks source",
        ),
        (
            {
                "schema": 1,
                "rules": [{"id": "a", "stage": "gpu", "regex": "x", "cause": "c", "fix": "f", "source": "s"}],
            },
            "unknown stage",
        ),
        (
            {
                "schema": 1,
                "rules": [
                    {"id": "a", "stage": "build", "regex": "(", "cause": "c", "fix": "f", "source": "s"}
                ],
            },
            "invalid regex",
        ),
        (
            {
                "schema": 1,
                "rules": [
                    {"id": "a", "stage": "build", "regex": "x", "cause": "c", "fix": "f", "source": "s"}
                ]
                * 2,
            },
            "duplicate",
        ),
    ],
)
def test_invalid_rule_files_are_rejected(data, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_rules(data)


def test_rules_file_is_plain_yaml_with_header(repo: Path) -> None:
    raw = yaml.safe_load((repo / "tasks/ocrstack/data/doctor_rules.yaml").read_text(encoding="utf-8"))
    own = [r for r in load_rules() if r.backend is None]
    assert raw["schema"] == 1 and len(raw["rules"]) == len(own)
    # the SGLang back-end's rules come from its own file, through the back-end registry
    assert {r.id for r in load_rules() if r.backend == "sglang"} >= {"sglang-cuda-graph-capture-failed"}


# ---------------------------------------------------------------- CLI


def test_cli_file_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "serve.log"
    log.write_text(CASES["flashinfer-cubin-mismatch"][0], encoding="utf-8")
    assert main(["doctor", "--exit-zero", str(log)]) == 0
    out = capsys.readouterr().out
    assert "[flashinfer-cubin-mismatch] serve, line 3" in out and "pip uninstall flashinfer-cubin" in out
    assert main(["doctor", "--json", "--exit-zero", str(log)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["matched"] is True and data["findings"][0]["line_no"] == 3


def test_cli_exits_1_when_a_rule_matched_like_a_linter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "serve.log"
    log.write_text(CASES["flashinfer-cubin-mismatch"][0], encoding="utf-8")
    assert main(["doctor", str(log)]) == CheckFailed.exit_code == 1
    captured = capsys.readouterr()
    assert "pip uninstall flashinfer-cubin" in captured.out  # the findings are still printed
    assert "1 known problem(s) found in" in captured.err and "--exit-zero" in captured.err
    assert main(["doctor", "--json", str(log)]) == 1
    assert json.loads(capsys.readouterr().out)["matched"] is True  # stdout stays valid JSON
    clean = tmp_path / "ok.log"
    clean.write_text("INFO: Application startup complete.\n", encoding="utf-8")
    assert main(["doctor", str(clean)]) == 0


def test_cli_stdin_and_nothing_matched(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n"))
    assert main(["doctor", "-"]) == 0
    assert "no known error pattern matched in stdin" in capsys.readouterr().out


def test_cli_missing_file_is_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["doctor", str(tmp_path / "nope.log")])
    assert rc == InputError.exit_code
    assert "nope.log" in capsys.readouterr().err


def test_cli_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {r["id"] for r in listed} == {r.id for r in load_rules()}


def test_ptxas_short_form_and_headers_message() -> None:
    assert _ids(diagnose("ptxas fatal   : Unsupported .version 9.4; current version is '9.0'")) == [
        "ptxas-version-mismatch"
    ]
    hdr = '/venv/nvidia/cu13/include/cccl/cuda/std/__cccl/cuda_toolkit.h:42:4: error: #error "CUDA compiler and CUDA toolkit headers are incompatible, please check your include paths"'
    assert _ids(diagnose(hdr)) == ["ptxas-version-mismatch"]


def test_generic_rule_yields_to_the_specific_one_on_the_same_line() -> None:
    line = CASES["too-many-images"][0]
    assert "Error code: 400" in line
    assert _ids(diagnose(line)) == ["too-many-images"]
    # on its own line the generic 400 rule still reports
    assert _ids(diagnose('INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')) == [
        "image-request-400"
    ]
