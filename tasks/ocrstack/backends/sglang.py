"""SGLang (``sglang serve``): the MinerU-Diffusion fork (issue 14).

Build ``sglang-mineru`` (any build whose engine is ``sglang``): an ``sglang`` version carrying
the fork commit (versions.yaml ``mineru-diffusion.sglang-fork-commit``); upstream SGLang cannot
load MinerU-Diffusion. Gauges: ``python/sglang/srt/metrics/collector.py`` (needs
``--enable-metrics``). Doctor rules: ``data/backends/sglang_rules.yaml``.
"""

from __future__ import annotations

from typing import ClassVar

from ocrstack import versions
from ocrstack.backends.base import Backend, Gauges, Site


class Sglang(Backend):
    """SGLang's server; needs a GPU (LowConfidence diffusion decoding)."""

    name: ClassVar[str] = "sglang"
    gpu_required: ClassVar[bool] = True
    gauges: ClassVar[Gauges | None] = Gauges(
        "sglang:num_running_reqs", "sglang:num_queue_reqs", ("sglang:token_usage",)
    )
    parser_check: ClassVar[str | None] = "probe"
    rules_file: ClassVar[str | None] = "backends/sglang_rules.yaml"

    def detect(self, site: Site) -> tuple[str | None, str]:
        """The profile's build when the fork commit is in sglang's version, else None."""
        ver = site.version("sglang")
        if ver is None:
            return None, f"sglang not installed {site.where}"
        commit = str(versions.pin("mineru-diffusion.sglang-fork-commit"))
        if commit[:7] in ver:
            return site.build, f"sglang {ver} {site.where}"
        return None, f"sglang {ver} {site.where} is not the MinerU-Diffusion fork ({commit[:9]}; issue 8)"
