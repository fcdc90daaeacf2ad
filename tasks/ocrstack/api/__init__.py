"""``ocrstack api``: parse as a service (issue 12).

FastAPI app (:mod:`.app`) in front of a durable job store (:mod:`.store`, SQLite in WAL mode
plus a data directory) and worker threads (:mod:`.worker`) that call the same
:func:`ocrstack.parsing.pipeline.run` as ``ocrstack parse``; no second pipeline. Metrics in
:mod:`.metrics`, the web page in ``static/``, the ``parse --api`` client in :mod:`.client`, the
bounded load/fault run in :mod:`.loadtest`.
"""
