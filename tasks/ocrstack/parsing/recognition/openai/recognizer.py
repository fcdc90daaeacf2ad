"""The ``openai`` recognizer: layout-block crops to any OpenAI-compatible chat-completions server.

Works with vLLM (guide 4.1/4.2), ``transformers serve`` (guide 4.3), llama.cpp's ``llama-server``
and SGLang. For every block whose category has a prompt in the prompt set
(:mod:`ocrstack.parsing.recognition.openai.prompts`), the crop ``page.image.crop(bbox)`` is sent as
a PNG data URL with that prompt; ``enable_thinking`` is off (guide 5) and decoding greedy
(``temperature`` 0). Requests are spread over every ``--server-url`` (:class:`ocrstack.client.Dispatcher`).

Before the first page each server is probed (:func:`probe`): a misconfigured endpoint fails in
seconds with the URL and the ``curl --noproxy 127.0.0.1 URL/v1/models`` hint (guide 8: not after
1800 s); a server that is still starting (connection refused, 503) is probed again until
``--ready-timeout`` (issue 10). Servers that fail their probe while others pass rejoin after a
background check.

Faults during the run (issue 10, :mod:`ocrstack.client.dispatch`): a burst counts once, a failing
server leaves the rotation and is re-checked; a block that still fails after ``--retries`` counted
failures gets ``Block.error`` (marked failed in blocks.json and the Markdown; the page and
document are partial, exit 7) instead of failing the page; the run stops only when no server
has answered for ``--progress-timeout`` s. Answers are kept per request body
(:mod:`ocrstack.parsing.recognition.openai.answers`), so a rerun sends only the blocks without one.

Threading: :meth:`OpenAIRecognizer.recognize` is thread-safe; to keep every server busy, have up
to ``len(server_urls) * concurrency`` pages in flight (call it from several threads, or use
:meth:`OpenAIRecognizer.submit`, which returns a future). :meth:`OpenAIRecognizer.abort` cuts off
the requests in flight from any thread (``Dispatcher.abort``).

The answer is stored raw in ``Block.text`` (tables stay OTSL; the assembly stage
converts them with :func:`ocrstack.parsing.assembly.otsl.replace_otsl`), except that a
``<think>...</think>`` preamble is removed. Per-block warnings: empty output,
output cut at ``max_tokens``, thinking text found, crop outside the page.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ocrstack.client import (
    BACKOFF_BASE,
    Completion,
    Dispatcher,
    JobGroup,
    ProbeResult,
    chat_body,
    png_data_url,
    probe_servers,
)
from ocrstack.client.http import public_url
from ocrstack.client.probe import probe
from ocrstack.core.errors import RequestFailed, ServerRejected
from ocrstack.parsing.crops import resize_by_need, rotate
from ocrstack.parsing.engines import Recognizer
from ocrstack.parsing.options import OpenAIOptions, ParseOptions
from ocrstack.parsing.outputs import CACHE_DIR
from ocrstack.parsing.recognition.openai import prompts as prompt_sets
from ocrstack.parsing.recognition.openai.answers import AnswerCache
from ocrstack.parsing.types import Block, PageImage

__all__ = ["OpenAIOptions", "OpenAIRecognizer", "create", "probe", "ProbeResult", "crop_box"]

_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)

#: Greedy decoding (guide 5): the same crop always gives the same answer.
TEMPERATURE = 0.0
#: Upper bound in seconds of the probe request before the first page (guide 8: fail in seconds).
PROBE_TIMEOUT = 60.0


def crop_box(
    bbox: tuple[float, float, float, float], size: tuple[int, int]
) -> tuple[int, int, int, int] | None:
    """Integer crop box for a float bbox: rounded outward, clamped to the page; None if nothing is left.

    Args:
        bbox: (x0, y0, x1, y1) in page pixels.
        size: (width, height) of the page image.
    """
    w, h = size
    x0, y0 = max(0, math.floor(bbox[0])), max(0, math.floor(bbox[1]))
    x1, y1 = min(w, math.ceil(bbox[2])), min(h, math.ceil(bbox[3]))
    if x1 - x0 < 1 or y1 - y0 < 1:
        return None
    return x0, y0, x1, y1


class OpenAIRecognizer(Recognizer):
    """Recognizer (:class:`ocrstack.parsing.engines.Recognizer`) backed by OpenAI-compatible servers.

    ``settings`` are the :class:`~ocrstack.parsing.options.OpenAIOptions` (declared once there,
    defaults included); ``probe_timeout`` (default ``min(request_timeout, PROBE_TIMEOUT)``) and
    ``backoff_base`` tune the probe and the retry backoff (tests use short ones); ``answers`` is
    the block-level cache (None: none).
    """

    name = "openai"
    #: Requests go to servers, so several pages should be in flight.
    remote = True
    #: Options that change what a crop's answer is (page-cache key). ``keep_paratext``: without it
    #: header/footer/page-number crops are not sent, so their text is absent.
    cache_fields = frozenset({"model", "prompts", "max_tokens", "keep_paratext"})

    def __init__(
        self,
        settings: OpenAIOptions,
        prompt_set: prompt_sets.PromptSet | None = None,
        *,
        probe_timeout: float | None = None,
        backoff_base: float = BACKOFF_BASE,
        answers: AnswerCache | None = None,
    ) -> None:
        self.settings = settings
        self.answers = answers
        self.prompt_set = prompt_set or prompt_sets.load(settings.prompts)
        self.temperature = TEMPERATURE
        self.probe_timeout = (
            min(float(settings.request_timeout), PROBE_TIMEOUT) if probe_timeout is None else probe_timeout
        )
        self.backoff_base = backoff_base
        self._dispatcher: Dispatcher | None = None
        self._lock = threading.Lock()
        self.probes: list[ProbeResult] = []

    def __repr__(self) -> str:
        return f"OpenAIRecognizer({self.settings!r})"

    @property
    def workers(self) -> int:
        """Pages processed at once: ``concurrency`` x servers, so every server stays busy."""
        return max(1, self.settings.concurrency * max(1, len(self.settings.server_urls)))

    def describe(self) -> dict[str, Any]:
        """Provenance for ``NAME.blocks.json``: recognizer, model, prompt set, servers (no key)."""
        return {
            "recognizer": self.name,
            "model": self.settings.model,
            "prompts": self.prompt_set.name,
            "prompts_file": str(self.prompt_set.path),
            "unverified_prompts": self.prompt_set.unverified(),
            "servers": [public_url(u) for u in self.settings.server_urls],
            "temperature": self.temperature,
            "max_tokens": self.settings.max_tokens,
        }

    def model_info(self) -> dict[str, str]:
        """Flat provenance for ``blocks.json`` (pipeline hook): served model, prompt set, servers."""
        info = {
            "served_model": self.settings.model,
            "prompts": self.prompt_set.name,
            "servers": " ".join(public_url(u) for u in self.settings.server_urls),
        }
        if self.prompt_set.unverified():
            info["unverified_prompts"] = ",".join(self.prompt_set.unverified())
        return info

    def probe(self) -> list[ProbeResult]:
        """Called by the pipeline before the first page: same as :meth:`start`."""
        return self.start()

    # -- lifecycle

    def start(self) -> list[ProbeResult]:
        """Probe every server (in parallel) and start the dispatcher; idempotent.

        Servers that fail the probe are used only after they pass a later background check; if
        none passes, servers that are starting are probed again until ``ready_timeout`` s.

        Raises:
            ServerUnreachable: no server answers (message: URL + curl hint).
            ServerRejected: a server rejects the tiny request (wrong model name, missing
                ``--trust-request-mm-kwargs``, ...).
        """
        with self._lock:
            if self._dispatcher is not None:
                return self.probes
            s = self.settings
            results, down = probe_servers(
                s.server_urls,
                s.model,
                timeout=self.probe_timeout,
                api_key=s.api_key,
                ready_timeout=s.ready_timeout,
            )
            for _url, exc in down:
                print(
                    f"ocrstack: warning: {exc.render()} (continuing with the other servers)", file=sys.stderr
                )
            self._dispatcher = Dispatcher(
                s.server_urls,
                model=s.model,
                concurrency=s.concurrency,
                timeout=s.request_timeout,
                retries=s.retries,
                api_key=s.api_key,
                backoff_base=self.backoff_base,
                progress_timeout=s.progress_timeout,
                routing_mode=s.routing,
            )
            for url, _ in down:
                self._dispatcher.mark_down(url)
            self.probes = results
            return results

    def close(self) -> None:
        """Stop the worker threads and close connections; say on stderr what faults there were."""
        note = ""
        with self._lock:
            if self._dispatcher is not None:
                note = self._dispatcher.fault_note()
                self._dispatcher.close()
                self._dispatcher = None
        if note:
            print(f"ocrstack: {note}", file=sys.stderr)

    def abort(self) -> None:
        """Cut off the requests in flight and fail the others (a cancelled job): ``Dispatcher.abort``."""
        if (dispatcher := self._dispatcher) is not None:
            dispatcher.abort()

    def __enter__(self) -> OpenAIRecognizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per-server request counts (:meth:`ocrstack.client.dispatch.Dispatcher.stats`); empty
        before :meth:`start`."""
        return self._dispatcher.stats() if self._dispatcher else {}

    def http_clients(self) -> dict[str, Any]:
        """Each server's ``httpx.Client`` by base URL; empty before :meth:`start`."""
        with self._lock:
            return {s.url: s.client for s in self._dispatcher.servers} if self._dispatcher else {}

    # -- recognition

    def build_requests(
        self, page: PageImage, blocks: list[Block]
    ) -> list[tuple[Block, dict[str, Any] | None]]:
        """Crop, encode and build one request body per block (None: block not sent).

        Blocks whose category maps to no prompt (figures, abandoned regions) get
        None; a bbox entirely outside the page gets None and a warning.
        """
        out: list[tuple[Block, dict[str, Any] | None]] = []
        for block in blocks:
            prompt = self.prompt_set.for_category(block.category)
            if prompt is None:
                out.append((block, None))
                continue
            box = crop_box(block.bbox, page.size)
            if box is None:
                block.warnings.append(f"bbox {block.bbox} lies outside the {page.size} page: not recognised")
                out.append((block, None))
                continue
            # a whole-page block (layout "none") needs no copy of the page
            image = page.image if box == (0, 0, *page.size) else page.image.crop(box)
            image = rotate(image, block.rotation)  # layout vlm's rotation tag (run_end2end.py)
            if self.prompt_set.crop:  # e.g. MinerU-Diffusion's resize_by_need (issue 14)
                image = resize_by_need(image, **self.prompt_set.crop)
            body = chat_body(
                self.settings.model,
                prompt.text,
                png_data_url(image),
                system=self.prompt_set.system,
                max_tokens=self.settings.max_tokens,
                temperature=self.temperature,
            )
            body.update(self.prompt_set.request)  # e.g. MinerU-Diffusion's extra_body (issue 14)
            out.append((block, body))
        return out

    def submit(self, page: PageImage, blocks: list[Block]) -> Future[list[Block]]:
        """Queue every block of ``page``; the future gives the same blocks with ``text`` filled.

        Crops are encoded in the calling thread. A 4xx for any block fails the page
        at once (its unsent blocks are not sent); a block that kept failing gets ``error``
        (the others are kept); :class:`ServerUnreachable` when no server answered for
        ``progress_timeout`` s.
        """
        self.start()
        assert self._dispatcher is not None
        requests = self.build_requests(page, blocks)
        group = JobGroup()
        pending: list[tuple[Block, Future[Completion]]] = []
        bodies: dict[int, dict[str, Any]] = {}
        for block, body in requests:
            if body is None:
                continue
            stored = self.answers.load(body) if self.answers is not None else None
            if stored is not None:
                _fill(block, Completion(stored[0], stored[1], "cache", 0.0, 0))
                continue
            fut = self._dispatcher.submit(body, group)
            fut.add_done_callback(lambda f, g=group: _cancel_on_reject(f, g))
            pending.append((block, fut))
            bodies[id(block)] = body

        def collect() -> list[Block]:
            first: BaseException | None = None
            for block, fut in pending:
                try:
                    done = fut.result()
                    _fill(block, done)
                    if self.answers is not None:
                        self.answers.store(bodies[id(block)], done.text, done.finish_reason)
                except RequestFailed as exc:  # this block only: the page goes on, marked partial
                    block.text = ""
                    block.error = exc.message
                    block.warnings.append(f"failed: {exc.message}")
                except ServerRejected as exc:
                    first = exc if not isinstance(first, ServerRejected) else first
                except Exception as exc:  # re-raised below
                    first = first or exc
            if first is not None:
                raise first
            return blocks

        if not pending:
            done: Future[list[Block]] = Future()
            done.set_result(blocks)
            return done
        return _gather(pending, collect)

    def recognize(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        """Fill ``text`` (and ``warnings``) of each block; same order. Blocking, thread-safe.

        Raises:
            ServerRejected: a 4xx answer (never retried; message has the known cause, guide 8).
            ServerUnreachable: no server answered anything for ``progress_timeout`` s.
        """
        return self.submit(page, blocks).result()


def _cancel_on_reject(fut: Future[Completion], group: JobGroup) -> None:
    exc = fut.exception()
    if isinstance(exc, ServerRejected):
        group.cancel(exc)


def _gather(pending: list[tuple[Block, Future[Completion]]], collect: Any) -> Future[list[Block]]:
    """A future completed (by the last request's callback, no extra thread) with ``collect()``."""
    out: Future[list[Block]] = Future()
    remaining = [len(pending)]
    lock = threading.Lock()

    def one_done(_: Future[Completion]) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            try:
                out.set_result(collect())
            except BaseException as exc:  # delivered through the future
                out.set_exception(exc)

    for _, fut in pending:
        fut.add_done_callback(one_done)
    return out


def _fill(block: Block, completion: Completion) -> None:
    """Store the answer in ``block.text`` and add warnings for empty / truncated / thinking output."""
    text = completion.text
    if _THINK.match(text):
        text = _THINK.sub("", text, count=1)
        block.warnings.append(
            "model emitted <think> text: enable_thinking was not honoured (guide 5); removed"
        )
    text = text.strip()
    if not text:
        block.warnings.append("empty output from the server (guide 8: thinking mode on, or a blank crop)")
    if completion.finish_reason == "length":
        block.warnings.append("output cut at max_tokens (finish_reason=length): raise --max-tokens")
    block.text = text


def create(options: ParseOptions) -> OpenAIRecognizer:
    """Factory used by :func:`ocrstack.parsing.recognition.create` for kind ``openai``.

    Loads and validates the prompt set at once (bad ``--prompts`` fails before any
    page is rendered); servers are probed on first use or by :meth:`OpenAIRecognizer.start`.
    Block answers are cached under the page cache directory (``--cache-dir``, else
    ``OUT/.ocrstack-cache``).

    Raises:
        UsageError / InputError: unknown prompt set or invalid prompt file.
    """
    settings = OpenAIOptions.of(options)
    if not settings.api_key and os.environ.get("OPENAI_API_KEY"):
        settings = dataclasses.replace(settings, api_key=os.environ["OPENAI_API_KEY"])
    root = options.cache_dir or Path(options.output) / CACHE_DIR
    return OpenAIRecognizer(settings, answers=AnswerCache(root))
