"""Layout kind ``vlm``: the served model finds the layout itself (MinerU-Diffusion, issue 14).

Two-stage parse as opendatalab/MinerU-Diffusion ``scripts/run_end2end.py`` (commit 8d456f1) does
it: one request per page with the prompt set's ``layout`` prompt (``"\\nLayout Detection:"``) and the
whole page resized to 1036 x 1036, answer parsed by :mod:`ocrstack.parsing.layout.vlm_answer`;
then the pipeline sends one request per block through the ``openai`` recognizer with the block
prompts of the same set (``"\\nText Recognition:"``, ``"\\nTable Recognition:"``,
``"\\nFormula Recognition:"``), each crop turned as its rotation tag says (``Block.rotation``).

Servers, model, prompt set, timeout and retries are the ``openai`` options (``--server-url``,
``--model``, ``--prompts``...): layout and blocks go to the same servers. The layout request carries
the layout prompt's ``max_tokens`` (2048 in the mineru-diffusion set) and the set's ``request``
fields (the repository client's diffusion settings). Labels map through the ``mineru-diffusion``
table of ``data/layout_labels.yaml``. The answer order is the model's reading order
(``gives_order``), as in run_end2end.py.

Per-page errors (:class:`~ocrstack.core.errors.LayoutAnswerError`): unreadable answer, answer cut
at ``max_tokens``; the other pages go on.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path
from typing import Any

from ocrstack.client import Dispatcher, chat_body, png_data_url
from ocrstack.core.errors import LayoutAnswerError, UsageError
from ocrstack.parsing.engines import LayoutProvider
from ocrstack.parsing.layout import labels
from ocrstack.parsing.layout.vlm_answer import parse_layout_answer, prepare_layout_image, to_page_pixels
from ocrstack.parsing.options import OpenAIOptions, ParseOptions
from ocrstack.parsing.recognition.openai import prompts as prompt_sets
from ocrstack.parsing.types import Block, PageImage

#: Label table in data/layout_labels.yaml.
LABEL_TABLE = "mineru-diffusion"
#: Greedy decoding, as the openai recognizer (guide 5).
TEMPERATURE = 0.0


class VlmLayout(LayoutProvider):
    """Layout from the served model's "Layout Detection:" answer (module docstring)."""

    name = "vlm"
    remote = True
    gives_order = True
    cache_fields = frozenset({"model", "prompts", "max_tokens"})

    def __init__(self, settings: OpenAIOptions, prompt_set: prompt_sets.PromptSet | None = None) -> None:
        self.settings = settings
        self.prompt_set = prompt_set or prompt_sets.load(settings.prompts)
        self.prompt = self.prompt_set.prompts.get("layout")
        if self.prompt is None or self.prompt.output != "layout":
            raise UsageError(
                f"--layout vlm: prompt set '{self.prompt_set.name}' has no 'layout' prompt (output: layout)",
                "use --prompts mineru-diffusion, or add a layout prompt to your prompt file",
            )
        self._dispatcher: Dispatcher | None = None
        self._lock = threading.Lock()

    def model_info(self) -> dict[str, str]:
        """Provenance for blocks.json: served model, layout prompt, image size sent."""
        return {
            "served_model": self.settings.model,
            "prompt": self.prompt.text.strip(),
            "prompts": self.prompt_set.name,
            "image": "1036x1036",
            "max_tokens": str(self.max_tokens),
        }

    @property
    def max_tokens(self) -> int:
        """The layout prompt's ``max_tokens`` (the repository's 2048), else ``--max-tokens``."""
        return int(self.prompt.max_tokens or self.settings.max_tokens)

    def _client(self) -> Dispatcher:
        with self._lock:
            if self._dispatcher is None:
                s = self.settings
                self._dispatcher = Dispatcher(
                    s.server_urls,
                    model=s.model,
                    concurrency=s.concurrency,
                    timeout=s.request_timeout,
                    retries=s.retries,
                    api_key=s.api_key,
                    progress_timeout=s.progress_timeout,
                    routing_mode=s.routing,
                )
            return self._dispatcher

    def close(self) -> None:
        """Stop the request threads."""
        with self._lock:
            if self._dispatcher is not None:
                self._dispatcher.close()
                self._dispatcher = None

    def request_body(self, page: PageImage) -> dict[str, Any]:
        """The layout request: whole page at 1036 x 1036, layout prompt, set's ``request`` fields."""
        body = chat_body(
            self.settings.model,
            self.prompt.text,
            png_data_url(prepare_layout_image(page.image)),
            system=self.prompt_set.system,
            max_tokens=self.max_tokens,
            temperature=TEMPERATURE,
        )
        body.update(self.prompt_set.request)
        return body

    def detect(self, page: PageImage) -> list[Block]:
        """Ask the server for the page layout and return its blocks in answer order.

        Raises:
            LayoutAnswerError: unreadable answer or one cut at max_tokens (this page only).
            ServerRejected / ServerUnreachable: as the openai recognizer.
        """
        where = f"{Path(page.source).name} page {page.index + 1}"
        completion = self._client().submit(self.request_body(page)).result()
        answer = parse_layout_answer(completion.text, page=where)
        if completion.finish_reason == "length":
            raise LayoutAnswerError(
                f"{where}: the layout answer was cut at max_tokens={self.max_tokens} "
                f"after {len(answer.boxes)} boxes (finish_reason=length)",
                "raise max_tokens of the layout prompt in the prompt file (--prompts FILE)",
            )
        blocks = []
        for i, box in enumerate(answer.boxes):
            category, warning = labels.normalise(LABEL_TABLE, box.label)
            bbox = to_page_pixels(box, page.size)
            block = Block(bbox=bbox, category=category, order=i, label=box.label, rotation=box.angle or 0)
            if warning:
                block.warnings.append(warning)
            blocks.append(block)
        return blocks


def create(options: ParseOptions) -> VlmLayout:
    """Factory for the registry in :mod:`ocrstack.parsing.layout` (the ``openai`` options are used).

    Raises:
        UsageError: the prompt set has no layout prompt.
    """
    settings = OpenAIOptions.of(options)
    if not settings.api_key and os.environ.get("OPENAI_API_KEY"):  # as the openai recognizer
        settings = dataclasses.replace(settings, api_key=os.environ["OPENAI_API_KEY"])
    return VlmLayout(settings)
