"""Start, stop and restart recognition servers (guide 4): profiles, plan (pure), environment, process, runner.

Readiness waiting and the ``/metrics`` DSpark proof (guide 6) are shared with ``verify`` and
live in :mod:`ocrstack.client` (``client.readiness``, ``client.metrics``).
"""
