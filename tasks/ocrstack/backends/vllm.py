"""vLLM (``python -m vllm.entrypoints.openai.api_server``): the feat-ocr build and upstream PyPI.

Builds (``serve_profiles.yaml``): ``feat-ocr`` when the installed ``vllm`` version carries the
fork commit (versions.yaml ``vllm.fork-commit``, setuptools-scm local part), ``upstream`` when
it is versions.yaml ``upstream.vllm``. Gauges: ``vllm/v1/metrics/loggers.py``, summed over the
``engine`` label (``vllm:gpu_cache_usage_perc`` before vLLM 0.10). Doctor rules:
``data/backends/vllm_rules.yaml``.
"""

from __future__ import annotations

from typing import ClassVar

from ocrstack import versions
from ocrstack.backends.base import Backend, Gauges, Site


class Vllm(Backend):
    """vLLM's OpenAI-compatible server; needs a GPU (guide 4.1)."""

    name: ClassVar[str] = "vllm"
    gpu_required: ClassVar[bool] = True
    gauges: ClassVar[Gauges | None] = Gauges(
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        labels=("engine", "model_name"),
    )
    parser_check: ClassVar[str | None] = "probe"
    rules_file: ClassVar[str | None] = "backends/vllm_rules.yaml"

    def detect(self, site: Site) -> tuple[str | None, str]:
        """``feat-ocr`` (fork commit in the version), ``upstream`` (``upstream.vllm``), else None."""
        ver = site.version("vllm")
        if ver is None:
            return None, f"vllm not installed {site.where}"
        commit = str(versions.pin("vllm.fork-commit"))
        if commit[:7] in ver:
            return "feat-ocr", f"vllm {ver} {site.where}"
        if ver == str(versions.pin("upstream.vllm")):
            return "upstream", f"vllm {ver} {site.where}"
        return None, f"vllm {ver} {site.where} is neither the feat-ocr build ({commit}) nor upstream"
