"""``ocrstack api``: parse as a service (issue 12).

FastAPI app (:mod:`.app`) in front of a durable job store (:mod:`.store`, SQLite in WAL mode
plus a data directory) and worker threads (:mod:`.worker`) that call the same
:func:`ocrstack.parsing.run.pipeline.run` as ``ocrstack parse``; no second pipeline. Metrics in
:mod:`.metrics`, the web page in ``static/`` (its vendored markdown-it, KaTeX, DOMPurify and
Swagger UI in ``static/vendor/``, served by :mod:`.docs` at ``/docs``), the settings in
:mod:`.config` (importable without the ``api`` extra), the ``parse --api`` client in
:mod:`.client`, the bounded load/fault run in :mod:`.loadtest`.
"""
