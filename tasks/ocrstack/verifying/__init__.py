"""``ocrstack verify`` (``nox -s verify``): the guide's result checks, reporting only what ran (guide 10).

* :mod:`ocrstack.verifying.outputs` -- guide 6 checks on a parsed Markdown file.
* DSpark activity -- :func:`ocrstack.serving.metrics.run_check` (guide 6), when a URL is given.
* :mod:`ocrstack.verifying.backends` / :mod:`~ocrstack.verifying.compare` -- the guide 7
  two-backend verbatim check, generalised: transformers in-process ``generate`` and any
  OpenAI-compatible server, same image and prompt, greedy; equal prompt tokens, identical
  output, ``</otsl>`` ending for table prompts.
* :mod:`ocrstack.verifying.tiny` -- the CPU run: tiny checkpoint in-process vs ``transformers serve``.
* :mod:`ocrstack.verifying.run` -- options and orchestration of the sections.
* :mod:`ocrstack.verifying.report` -- the summary statements and the JSON/text report files.
"""

from __future__ import annotations

from ocrstack.verifying.options import VerifyOptions
from ocrstack.verifying.run import VerifyResult, run

__all__ = ["VerifyOptions", "VerifyResult", "run"]
